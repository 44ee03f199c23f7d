"""Text-direction controls are shown, never obeyed (agui_project/visible.py, the `shown` filter)."""

import json

import pytest
from django.template import Context, Template

from agui_project.visible import BIDI_CONTROLS, INVISIBLE, json_escapes, reveal_html, reveal_text

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


@pytest.mark.parametrize("char", list(INVISIBLE))
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
