"""A tool's results and refusals, one `Sentence` per shape: the model reads it in English, a person in their language.

A sentence is a msgid with a placeholder per value ("Account %(account)s holds %(balance)s %(currency)s.").
The tool writes `SENTENCE(account=..., ...)`: the msgid filled in, the English the model reads (as before:
what the model reads does not change). Whoever shows the result to a person (the chat's tool card, the
offline demo model retelling it) reads the values back out of that English (`person_words`) and says the
translated msgid in the active language, amounts as the language writes them ("1 200,50").

A result no sentence matches (an MCP server's, a tool's JSON) has no person's words: it is shown as what
the assistant was told.
"""

import json
import re
import sys
from decimal import Decimal, InvalidOperation

from django.utils.formats import number_format
from django.utils.translation import gettext

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")
SENTENCES = []  # every Sentence made, in the order made (the tools' modules make theirs when imported)
MAX_READ = 2000  # characters: our sentences are a line; a longer result (a file's text) is no sentence of ours


class Sentence:
    """`msgid`: marked for translation where it is written (gettext_noop). `money`: placeholders that are
    amounts (shown to whole cents, grouped; "129.99 USD" keeps its currency); `words`: placeholders holding a
    msgid of their own ("account"); `choices`: {placeholder: {value: label}} (a TextChoices' labels).
    `owner`: the module that made it (a tool's module: only its tools' results are read with it)."""

    def __init__(self, msgid, money=(), words=(), choices=None):
        self.msgid, self.money, self.words, self.choices = msgid, frozenset(money), frozenset(words), choices or {}
        self.literals, self.names, end = [], [], 0
        for found in _PLACEHOLDER.finditer(msgid):
            self.literals.append(msgid[end:found.start()])
            self.names.append(found[1])
            end = found.end()
        self.literals.append(msgid[end:])
        frame = sys._getframe(1)
        while frame.f_globals.get("__name__") == __name__:  # a subclass's __init__: its caller's module
            frame = frame.f_back
        self.owner = frame.f_globals.get("__name__", "")
        SENTENCES.append(self)

    def __call__(self, **values):
        """The English the model reads."""
        return self.msgid % values

    def read(self, text):
        """The values of `text` when it is this sentence, else None. Read left to right, each value up to
        the first place the text after it follows (a regular expression with a group per value backtracked
        to no end on a long result: a file read back froze the web process), and kept only when the
        values make `text` again (a value holding the words after it is not this sentence's)."""
        text = text.strip()
        if len(text) > MAX_READ or not text.startswith(self.literals[0]):
            return None
        if not self.names:
            return {} if text == self.msgid else None
        values, at = {}, len(self.literals[0])
        for index, name in enumerate(self.names):
            after = self.literals[index + 1]
            if index + 1 == len(self.names):
                end = len(text) - len(after)
                if not text.endswith(after) or end <= at:
                    return None
            else:
                end = text.find(after, at + 1) if after else -1  # a value is never empty
                if end < 0:
                    return None
            value = text[at:end]
            if values.setdefault(name, value) != value:
                return None
            at = end + len(after)
        return values if self.msgid % values == text else None

    def say(self, values):
        """The sentence in the active language."""
        shown = {}
        for name, value in values.items():
            if name in self.money:
                value = _amount(value)
            elif name in self.words:
                value = gettext(value)
            elif name in self.choices:
                value = str(self.choices[name].get(value, value))
            shown[name] = value
        return gettext(self.msgid) % shown


class Record(Sentence):
    """A result that is a JSON object of these keys (a lookup's record): its values fill the sentence."""

    def __init__(self, msgid, keys, **kinds):
        super().__init__(msgid, **kinds)
        self.keys = frozenset(keys)

    def __call__(self, **values):
        return json.dumps(values)

    def read(self, text):
        try:
            record = json.loads(text)
        except (TypeError, ValueError):
            return None
        if not isinstance(record, dict) or set(record) != self.keys:
            return None
        return {k: str(v) for k, v in record.items()}


def _amount(text):
    number, _space, currency = str(text).partition(" ")
    try:
        shown = number_format(Decimal(number).quantize(Decimal("0.01")), 2, force_grouping=True)
    except (InvalidOperation, ValueError):
        return text
    return f"{shown} {currency}" if currency else shown


def person_words(text, owners=None):
    """`text` (a tool's result or refusal, as the model reads it) in the active language, or None when no
    Sentence has its shape. `owners`: the modules whose sentences may word it (the tool's own, and the
    runtime's refusals): another tool's output that happens to read like one (a file holding "Refund of
    4999 USD recorded…") is not said as though our tool had done it. None: any (the demo model's retelling)."""
    for sentence in SENTENCES:
        if owners is not None and sentence.owner not in owners:
            continue
        values = sentence.read(text or "")
        if values is not None:
            return sentence.say(values)
    return None
