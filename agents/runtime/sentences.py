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
from decimal import Decimal, InvalidOperation

from django.utils.formats import number_format
from django.utils.translation import gettext

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")
SENTENCES = []  # every Sentence made, in the order made (the tools' modules make theirs when imported)


class Sentence:
    """`msgid`: marked for translation where it is written (gettext_noop). `money`: placeholders that are
    amounts (shown to whole cents, grouped; "129.99 USD" keeps its currency); `words`: placeholders holding a
    msgid of their own ("account"); `choices`: {placeholder: {value: label}} (a TextChoices' labels)."""

    def __init__(self, msgid, money=(), words=(), choices=None):
        self.msgid, self.money, self.words, self.choices = msgid, frozenset(money), frozenset(words), choices or {}
        pattern, seen, end = [], set(), 0
        for found in _PLACEHOLDER.finditer(msgid):
            pattern.append(re.escape(msgid[end:found.start()]))
            name = found[1]
            pattern.append(f"(?P={name})" if name in seen else f"(?P<{name}>.+?)")
            seen.add(name)
            end = found.end()
        pattern.append(re.escape(msgid[end:]))
        self.pattern = re.compile("".join(pattern), re.S)
        SENTENCES.append(self)

    def __call__(self, **values):
        """The English the model reads."""
        return self.msgid % values

    def read(self, text):
        """The values of `text` when it is this sentence, else None."""
        found = self.pattern.fullmatch(text.strip())
        return found.groupdict() if found else None

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


def person_words(text):
    """`text` (a tool's result or refusal, as the model reads it) in the active language, or None when no
    Sentence has its shape."""
    for sentence in SENTENCES:
        values = sentence.read(text or "")
        if values is not None:
            return sentence.say(values)
    return None
