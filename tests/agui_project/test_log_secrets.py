"""The product's log does not carry the URLs it calls: a callback_url's or an MCP server's query token,
user and password, kept from reviewers on every page, were written whole by httpx at INFO."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import httpx2
import pytest


class Quiet(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("library", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_an_outgoing_requests_url_is_not_logged_at_the_default_level(library, server, caplog):
    with library.Client() as client:
        assert client.get(f"http://agent:hunter2@127.0.0.1:{server}/cb?token=s3cret").status_code == 204
    assert "s3cret" not in caplog.text and "hunter2" not in caplog.text
    assert "HTTP Request" not in caplog.text
