"""The shared-state panel: a recipe card that fills in while the model writes it, two tabs kept in
step by a person's edit, and a draft that stays marked as predicted until it is approved or rejected."""

from chat_helpers import T, new_chat, send
from playwright.sync_api import expect

# Records whether the recipe card was ever shown as a prediction, and how many ingredients it had then.
WATCH_CARDS = """() => {
    window.__cardsSeen = [];
    new MutationObserver(() => {
        const card = document.querySelector('#state-cards .state-card');
        if (!card) return;
        window.__cardsSeen.push({provisional: card.classList.contains('provisional'),
                                 ingredients: card.querySelectorAll('.ingredients li').length});
    }).observe(document.getElementById('state-cards'), {subtree: true, childList: true, characterData: true});
}"""


def test_recipe_card_fills_in_and_two_tabs_stay_in_step(people):
    alice = people("alice")
    page = alice.page
    thread = new_chat(page, agent="recipe")
    page.evaluate(WATCH_CARDS)
    send(page, "I want to make a classic Italian pasta carbonara")

    card = page.locator("#state-cards .state-card[data-state-key=recipe]")
    expect(card.locator(".recipe-title")).to_have_text("Classic Pasta Carbonara", timeout=T)
    expect(card.locator(".ingredients li")).to_have_count(5, timeout=T)
    expect(card).not_to_have_class("state-card provisional", timeout=T)  # committed once the tool ran
    expect(page.locator("body")).to_have_attribute("data-state-version", "1")
    seen = page.evaluate("window.__cardsSeen")
    # it was shown as a prediction first, growing
    assert any(s["provisional"] and s["ingredients"] < 5 for s in seen), seen
    alice.shoot("recipe")

    # a second tab of the same chat, then an edit in the first: both show it
    other = alice.ctx.new_page()
    other.goto(f"/chat/{thread}/")
    expect(other.locator("#state-cards .recipe-title")).to_have_text("Classic Pasta Carbonara", timeout=T)
    page.once("dialog", lambda d: d.accept("Carbonara for two"))
    card.get_by_role("button", name="Rename the recipe").click()
    expect(page.locator("#state-status")).to_have_text("Saved.", timeout=T)
    for p in (page, other):
        expect(p.locator("#state-cards .recipe-title")).to_have_text("Carbonara for two", timeout=T)
        expect(p.locator("body")).to_have_attribute("data-state-version", "2")
    # the agent sees it next turn and keeps everything
    send(page, "Make it vegetarian")
    for p in (page, other):
        expect(p.locator("#state-cards .chip", has_text="Vegetarian")).to_be_visible(timeout=T)
        expect(p.locator("#state-cards .recipe-title")).to_have_text("Carbonara for two")
    alice.shoot("two-tabs")
    other.close()


def test_a_draft_is_marked_predicted_until_rejected(people):
    alice = people("alice")
    page = alice.page
    new_chat(page, agent="writer")
    send(page, "Write a short document about remote work")
    card = page.locator("#state-cards .state-card[data-state-key=document]")
    expect(card.locator(".doc-title")).to_have_text("Remote work", timeout=T)
    expect(card).to_have_class("state-card provisional")
    expect(card.locator(".badge-provisional")).to_be_visible()
    alice.shoot("draft")

    approval = page.locator(".tool-card", has_text="create_document").locator(".approval-card")
    approval.get_by_role("button", name="Reject", exact=True).click()
    approval.locator("[data-act=confirm-reject]").click()
    expect(page.locator("#state-cards .state-card")).to_have_count(0, timeout=T)  # reverted
    expect(page.locator("#messages")).to_contain_text("I discarded the draft", timeout=T)
    alice.shoot("rejected")
