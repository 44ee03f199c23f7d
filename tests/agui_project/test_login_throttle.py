"""Sign-in throttling (agui_project/login_throttle.py): failed passwords are counted per account and
address in Redis; past the limit that account refuses that address, with a message, until the
window ends; other addresses and other accounts are not affected; Redis away means no throttle."""

import pytest
import redis
from django.conf import settings as django_settings

from agents.runtime.events import redis_client
from agui_project import login_throttle

pytestmark = pytest.mark.django_db
HOME = "10.0.0.1"


@pytest.fixture(autouse=True)
def small_limit(settings):
    settings.AGUI_LOGIN_MAX_FAILURES = 3
    settings.AGUI_LOGIN_WINDOW_SECONDS = 600


def sign_in(client, username, password, address=HOME, url="/accounts/login/"):
    return client.post(url, {"username": username, "password": password}, REMOTE_ADDR=address)


def signed_in(client):
    return "_auth_user_id" in client.session


def test_failures_past_the_limit_refuse_even_the_right_password_from_that_address(client, demo):
    for _ in range(3):
        resp = sign_in(client, "alice", "wrong")
        assert resp.status_code == 200 and not signed_in(client)
        assert b"Please enter a correct username and password" in resp.content
    resp = sign_in(client, "alice", django_settings.DEMO_PASSWORD)
    assert resp.status_code == 200 and not signed_in(client)
    assert b"Too many failed sign-ins for this account from your address. Try again in 10 minutes." in resp.content
    ttl = redis_client().ttl(f"agui:login-failures:alice:{HOME}")
    assert 590 < ttl <= 600  # the window runs from the first failure; a refused try does not extend it

    # alice elsewhere, and bob here, are not locked out by these failures
    assert sign_in(client, "alice", django_settings.DEMO_PASSWORD, address="10.0.0.2").status_code == 302
    client.logout()
    assert sign_in(client, "bob", django_settings.DEMO_PASSWORD).status_code == 302
    client.logout()
    # the window over (its key expired), alice signs in here again
    redis_client().delete(f"agui:login-failures:alice:{HOME}")
    assert sign_in(client, "alice", django_settings.DEMO_PASSWORD).status_code == 302


def test_a_success_clears_the_accounts_failures(client, demo):
    for _ in range(2):
        sign_in(client, "alice", "wrong")
    assert sign_in(client, "alice", django_settings.DEMO_PASSWORD).status_code == 302
    client.logout()
    for _ in range(2):
        sign_in(client, "alice", "wrong")
    assert sign_in(client, "alice", django_settings.DEMO_PASSWORD).status_code == 302  # 2 + 2 failures, not 4


def test_one_address_trying_many_accounts_is_throttled_too(client, demo):
    for n in range(3 * login_throttle.ADDRESS_FACTOR):
        sign_in(client, f"nobody-{n}", "wrong")  # never the same account twice
    resp = sign_in(client, "bob", django_settings.DEMO_PASSWORD)
    assert resp.status_code == 200 and not signed_in(client) and b"Too many failed sign-ins" in resp.content
    assert sign_in(client, "bob", django_settings.DEMO_PASSWORD, address="10.0.0.3").status_code == 302


def test_the_admin_sign_in_is_throttled_the_same_way(client, demo):
    for _ in range(3):
        sign_in(client, "admin", "wrong", url="/admin/login/")
    resp = sign_in(client, "admin", django_settings.DEMO_PASSWORD, url="/admin/login/")
    assert resp.status_code == 200 and not signed_in(client)
    assert b"Too many failed sign-ins" in resp.content


def test_without_redis_sign_in_works_unthrottled(client, demo, monkeypatch, caplog):
    class Down:
        def __getattr__(self, name):
            raise redis.ConnectionError("Connection refused")

    monkeypatch.setattr(login_throttle, "_client", lambda: Down())
    for _ in range(5):
        assert sign_in(client, "alice", "wrong").status_code == 200
    assert sign_in(client, "alice", django_settings.DEMO_PASSWORD).status_code == 302
    assert "sign-in throttle skipped: Redis unreachable" in caplog.text


# --- behind a proxy (AGUI_TRUSTED_PROXIES) -----------------------------------------------------
PROXY = "10.9.0.2"


def via_proxy(client, username, password, forwarded_for, proxy=PROXY):
    return client.post("/accounts/login/", {"username": username, "password": password},
                       REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=forwarded_for)


def test_behind_a_trusted_proxy_the_forwarded_client_is_counted(client, demo, settings):
    settings.AGUI_TRUSTED_PROXIES = ["10.9.0.0/24"]
    for _ in range(3):
        via_proxy(client, "alice", "wrong", "203.0.113.7")
    resp = via_proxy(client, "alice", django_settings.DEMO_PASSWORD, "203.0.113.7")
    assert resp.status_code == 200 and b"Too many failed sign-ins" in resp.content
    assert redis_client().get("agui:login-failures:alice:203.0.113.7") == b"3"
    # another person behind the same proxy is a different address, not the proxy's
    assert via_proxy(client, "alice", django_settings.DEMO_PASSWORD, "198.51.100.4").status_code == 302


def test_the_right_most_untrusted_hop_is_the_client(client, demo, settings):
    """Entries left of it were written by the client: a fresh made-up one per try does not help."""
    settings.AGUI_TRUSTED_PROXIES = ["10.9.0.0/24", "192.0.2.10"]
    for n in range(3):
        via_proxy(client, "alice", "wrong", f"1.2.3.{n}, 203.0.113.7, 192.0.2.10")
    resp = via_proxy(client, "alice", django_settings.DEMO_PASSWORD, "9.9.9.9, 203.0.113.7, 192.0.2.10")
    assert resp.status_code == 200 and b"Too many failed sign-ins" in resp.content


def test_x_forwarded_for_from_an_untrusted_peer_is_ignored(client, demo, settings):
    settings.AGUI_TRUSTED_PROXIES = ["10.9.0.0/24"]
    for n in range(3):  # a client talking to us directly cannot pick its address with the header
        via_proxy(client, "alice", "wrong", f"198.51.100.{n}", proxy=HOME)
    resp = via_proxy(client, "alice", django_settings.DEMO_PASSWORD, "198.51.100.200", proxy=HOME)
    assert resp.status_code == 200 and b"Too many failed sign-ins" in resp.content
    assert redis_client().get(f"agui:login-failures:alice:{HOME}") == b"3"


@pytest.mark.parametrize("remote,forwarded,expected", [
    ("10.9.0.2", "203.0.113.7", "203.0.113.7"),
    ("10.9.0.2", "", "10.9.0.2"),  # the proxy's own request
    ("10.9.0.2", "garbage", "10.9.0.2"),  # not an address: nothing better than the proxy
    ("10.9.0.2", "203.0.113.7, 10.9.0.3", "203.0.113.7"),  # two trusted hops
    ("::ffff:10.9.0.2", "2001:db8::1", "2001:db8::1"),  # an IPv4-mapped proxy address, an IPv6 client
    ("203.0.113.9", "1.1.1.1", "203.0.113.9"),  # not a trusted proxy
    ("", "1.1.1.1", "unknown"),
])
def test_client_address(rf, settings, remote, forwarded, expected):
    settings.AGUI_TRUSTED_PROXIES = ["10.9.0.0/24"]
    request = rf.get("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    assert login_throttle.client_address(request) == expected


def test_without_trusted_proxies_the_header_means_nothing(rf, settings):
    settings.AGUI_TRUSTED_PROXIES = []
    assert login_throttle.client_address(rf.get("/", REMOTE_ADDR="10.9.0.2", HTTP_X_FORWARDED_FOR="1.1.1.1")) == "10.9.0.2"


def test_a_proxy_left_out_of_the_trusted_ones_is_named_in_the_log_once(client, demo, settings, caplog):
    """Behind a proxy missing from AGUI_TRUSTED_PROXIES every client is the proxy's address: five times
    the limit of failures from anyone, over all accounts, refuse everyone behind it. It said nothing."""
    settings.AGUI_TRUSTED_PROXIES = []
    login_throttle._WARNED.discard("10.9.0.2")
    with caplog.at_level("WARNING", logger="agui_project.login_throttle"):
        via_proxy(client, "alice", "wrong", "203.0.113.7")
        via_proxy(client, "bob", "wrong", "198.51.100.4")
        sign_in(client, "alice", "wrong", address="10.9.0.3")  # no header: a client of its own, nothing said
    lines = [r.getMessage() for r in caplog.records if r.name == "agui_project.login_throttle"]
    assert len(lines) == 1, lines
    assert "10.9.0.2" in lines[0] and "AGUI_TRUSTED_PROXIES" in lines[0] and "after 15 failed" in lines[0], lines
    assert redis_client().get("agui:login-failures-from:10.9.0.2") == b"2"  # both counted as the proxy


def lockouts(caplog):
    return [r for r in caplog.records if r.name == "agui_project.login_throttle" and "lockout" in r.getMessage()]


def test_a_lockout_is_one_warning_naming_the_account_and_the_address(client, demo, caplog, settings):
    """A lockout was in Redis only: nobody asked "why can't bob sign in" found it in any log."""
    settings.AGUI_TRUSTED_PROXIES = ["127.0.0.1/32"]
    with caplog.at_level("INFO", logger="agui_project.login_throttle"):
        for _ in range(5):  # three failures lock; the refused tries after them are not new lockouts
            client.post("/accounts/login/", {"username": "bob", "password": "Secr3t-guess"}, REMOTE_ADDR="127.0.0.1",
                        HTTP_X_FORWARDED_FOR="203.0.113.5")
    [record] = lockouts(caplog)
    line = record.getMessage()
    assert record.levelname == "WARNING"
    assert "account 'bob'" in line and "203.0.113.5" in line and "3 failed passwords" in line
    assert "Secr3t-guess" not in caplog.text  # never the password


def test_a_lockout_of_a_name_nobody_has_does_not_write_that_name(client, demo, caplog):
    """What was typed as the name is sometimes a password."""
    with caplog.at_level("INFO", logger="agui_project.login_throttle"):
        for _ in range(3):
            sign_in(client, "hunter2-oops", "wrong")
    [record] = lockouts(caplog)
    assert "an account name nobody has" in record.getMessage() and "hunter2-oops" not in caplog.text


def test_an_address_locked_out_of_every_account_is_said_once(client, demo, caplog):
    with caplog.at_level("INFO", logger="agui_project.login_throttle"):
        for n in range(3 * login_throttle.ADDRESS_FACTOR + 2):
            sign_in(client, f"nobody-{n}", "wrong")
    [record] = [r for r in lockouts(caplog) if "every account" in r.getMessage()]
    assert HOME in record.getMessage() and "15 failed passwords" in record.getMessage()
