"""A webhook receiver on 127.0.0.1 for the tests: scripted answers, every message kept."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook


class Receiver:
    """A webhook receiver on 127.0.0.1: answers the scripted codes in turn (then 200), keeps what came."""

    def __init__(self):
        self.codes, self.received = [], []
        self.arrived = threading.Condition()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                with owner.arrived:  # kept before answering: the sender's attempt ends after this
                    owner.received.append((dict(self.headers), body))
                    code = owner.codes.pop(0) if owner.codes else 200
                    owner.arrived.notify_all()
                self.send_response(code)
                self.end_headers()
                self.wfile.write(b"x" * 5000 if code >= 500 else b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def verified(self, secret):
        """Every message, checked by the library a receiver would use; raises on a bad signature."""
        return [Webhook(secret).verify(body, headers) for headers, body in self.received]

    def wait_for(self, count, timeout=20.0):
        """Block until `count` messages have come (a real worker sends them)."""
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.received) >= count, timeout=timeout):
                raise AssertionError(f"{len(self.received)} of {count} webhook messages came within {timeout}s")
        return self.received
