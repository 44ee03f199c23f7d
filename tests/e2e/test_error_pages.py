"""The styled error pages in a browser: bob (an end user) opening the inbox gets the site's page
with its navigation and a sentence that says why, at desktop and phone sizes."""

import pytest
from playwright.sync_api import expect

SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.mark.parametrize("size", list(SIZES))
def test_bob_on_the_inbox_gets_the_styled_403(browser, live_stack, login, artifacts_dir, size):
    ctx = browser.new_context(base_url=live_stack.url, viewport=SIZES[size])
    try:
        page = ctx.new_page()
        login(page, "bob")
        response = page.goto("/inbox/")
        assert response.status == 403
        expect(page.get_by_role("heading", level=1)).to_have_text("This page isn't open to your account")
        expect(page.locator("main")).to_contain_text("The inbox is for reviewers. You are signed in as bob")
        nav = page.get_by_role("navigation", name="Main")
        expect(nav.get_by_role("link", name="Chat")).to_be_visible()
        expect(nav.get_by_role("link", name="Inbox")).to_have_count(0)
        assert page.evaluate("document.documentElement.scrollWidth") <= SIZES[size]["width"]
        page.screenshot(path=str(artifacts_dir / f"error-403-{size}.png"), full_page=True)
        page.get_by_role("link", name="Go to your start page").click()
        page.wait_for_url("**/chat/**")
    finally:
        ctx.close()
