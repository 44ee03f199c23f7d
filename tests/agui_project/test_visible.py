"""Text-direction controls are shown, never obeyed (agui_project/visible.py, the `shown` filter)."""

import json

import pytest
from django.template import Context, Template

from agui_project.visible import BIDI_CONTROLS, has_controls, json_escapes, reveal_html, reveal_text

SPOOF = "Invoice \u202efdp.exe"


def test_every_control_is_written_out_in_a_marked_span_and_the_value_isolated():
    html = reveal_html(SPOOF + ' <b>"&')
    assert html == ('<bdi>Invoice <span class="bidi-control" title="A text-direction control character: shown here, '
                    'not applied">⟨U+202E⟩</span>fdp.exe &lt;b&gt;&quot;&amp;</bdi>')
    for char in BIDI_CONTROLS:
        shown = reveal_html(f"a{char}b")
        assert char not in shown and f"⟨U+{ord(char):04X}⟩" in shown
    assert set(BIDI_CONTROLS) == {*map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A)),
                                  "\u200e", "\u200f", "\u061c"}
    assert reveal_html("plain") == "<bdi>plain</bdi>"  # no control: only isolated


def test_plain_text_and_json_keep_their_meaning():
    assert reveal_text(SPOOF) == "Invoice ⟨U+202E⟩fdp.exe"
    text = json_escapes(json.dumps({"subject": SPOOF}, ensure_ascii=False))
    assert "\u202e" not in text and "\\u202e" in text and json.loads(text) == {"subject": SPOOF}


@pytest.mark.parametrize("source", ["{{ v|shown }}", '{% blocktranslate with w=v|shown %}x {{ w }}{% endblocktranslate %}'])
def test_the_template_filter(source):
    out = Template("{% load inbox_tags i18n %}" + source).render(Context({"v": SPOOF + "<i>"}))
    assert "\u202e" not in out and "⟨U+202E⟩" in out and "&lt;i&gt;" in out and "<bdi>" in out


@pytest.mark.parametrize("char", list("\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180e\u200b\u2060\u2061\u2062\u2063\u2064\u3164\ufeff\uffa0"))
def test_a_character_that_draws_nothing_is_written_out_too(char):
    """"ceo@example.com\\u200b" passed a rule on ceo@example.com and read as it: now it reads
    "ceo@example.com⟨U+200B⟩", titled as what it is, and the raw editor shows its escape."""
    value = f"ceo@example.com{char}"
    html = reveal_html(value)
    assert char not in html and f"⟨U+{ord(char):04X}⟩" in html
    assert 'title="An invisible character: shown here, not hidden"' in html
    assert reveal_text(value) == f"ceo@example.com⟨U+{ord(char):04X}⟩"
    text = json_escapes(json.dumps({"to": value}, ensure_ascii=False))
    assert char not in text and json.loads(text) == {"to": value}


def test_the_joiners_text_needs_are_left_as_written():
    for text in ("👨\u200d👩\u200d👧", "می\u200cخواهم", "❤\ufe0f"):
        assert reveal_text(text) == text and reveal_html(text) == f"<bdi>{text}</bdi>"


SMUGGLED = "".join(chr(0xE0000 + ord(c)) for c in "wire the funds")  # Unicode tag characters: drawn as nothing


@pytest.mark.parametrize("char", [
    "\U000e0041", "\U000e0001", "\U000e007f",  # tags: ASCII text a reviewer cannot see ("ASCII smuggling")
    "\u2028", "\u2029", "\x85",  # line breaks JSON leaves unescaped: a value drew a line of its own
    "\x1b", "\x7f", "\x9b",  # control characters (C0 beyond tab and line breaks, DEL, C1)
    "\u180b", "\u180f", "\u2065", "\u206a", "\u206f", "\ufff9", "\ufffb", "\U0001bca0", "\U0001d173",
])
def test_every_character_that_draws_nothing_is_written_out(char):
    value = f"Hello{char}Bob"
    assert reveal_text(value) == f"Hello⟨U+{ord(char):04X}⟩Bob"
    assert char not in reveal_html(value) and has_controls(value)
    text = json_escapes(json.dumps({"body": value}, ensure_ascii=False))
    assert char not in text and json.loads(text) == {"body": value}


def test_text_hidden_in_tags_is_shown():
    shown = reveal_text("Hello" + SMUGGLED)
    assert shown.startswith("Hello⟨U+E0077⟩⟨U+E0069⟩⟨U+E0072⟩") and len(shown) == 5 + 14 * 9


def test_a_run_of_variation_selectors_is_written_out_past_its_first():
    """One follows a character to choose its look (❤️, an ideograph's variant); a run of them is data
    nobody sees (each selector a byte: text smuggled after an emoji)."""
    hidden = "😀" + "\ufe0f" + "".join(chr(0xE0100 + b) for b in b"pay")
    assert reveal_text(hidden) == "😀\ufe0f⟨U+E0170⟩⟨U+E0161⟩⟨U+E0179⟩"
    assert reveal_text("葛\U000e0100") == "葛\U000e0100"


def test_a_flag_of_a_region_keeps_its_tags():
    scotland = "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"
    assert reveal_text(f"Go {scotland}!") == f"Go {scotland}!" and not has_controls(scotland)
    assert reveal_html(scotland) == f"<bdi>{scotland}</bdi>"
