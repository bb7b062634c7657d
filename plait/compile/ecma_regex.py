"""JSON Schema's regular expressions (ECMA-262, with the `u` flag) translated to RE2, so they run in linear time.

A schema's `pattern` is written in ECMA-262's dialect, and RE2 reads some of the same text
differently: its `\\s` is ASCII-only (ECMA's includes U+00A0, U+FEFF, the Zs spaces and the line
terminators), its `.` stops only at `\\n` (ECMA's at `\\r`, U+2028 and U+2029 too), it has no
`\\uXXXX` and reads `[]a]` as a class holding `]`. So a pattern is never handed to RE2 as written:
it is read as ECMA-262 and written out again as RE2 with the same meaning, character classes as
explicit code-point ranges. What RE2 cannot do in linear time (lookaround, backreferences) or
what ECMA-262 does not define (`\\z`, inline flags, `\\pL`) is refused with the RE2 way to say it.

No flags: JSON Schema patterns have none, so `^` and `$` are the start and the very end of the
text (`$` does not match before a final newline) and matching is case-sensitive.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

import re2  # type: ignore[import-untyped]

MAX_CODE_POINT = 0x10FFFF
Ranges = tuple[tuple[int, int], ...]

_DIGIT: Ranges = ((0x30, 0x39),)
_WORD: Ranges = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_SPACE: Ranges = (
    (0x09, 0x0D),  # tab, line feed, vertical tab, form feed, carriage return
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),  # line and paragraph separators (line terminators)
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),  # the byte order mark, which ECMA-262 counts as white space
)
"""ECMA-262's WhiteSpace and LineTerminator: what `\\s` matches."""
_LINE_TERMINATORS: Ranges = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
_CLASS_ESCAPES = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
_CONTROL_ESCAPES = {"t": 0x09, "n": 0x0A, "v": 0x0B, "f": 0x0C, "r": 0x0D}
_SYNTAX = frozenset("^$\\.*+?()[]{}|/")
_GENERAL_CATEGORIES = {
    "Letter": "L",
    "Cased_Letter": "LC",
    "Uppercase_Letter": "Lu",
    "Lowercase_Letter": "Ll",
    "Titlecase_Letter": "Lt",
    "Modifier_Letter": "Lm",
    "Other_Letter": "Lo",
    "Mark": "M",
    "Combining_Mark": "M",
    "Nonspacing_Mark": "Mn",
    "Spacing_Mark": "Mc",
    "Enclosing_Mark": "Me",
    "Number": "N",
    "Decimal_Number": "Nd",
    "digit": "Nd",
    "Letter_Number": "Nl",
    "Other_Number": "No",
    "Punctuation": "P",
    "punct": "P",
    "Connector_Punctuation": "Pc",
    "Dash_Punctuation": "Pd",
    "Open_Punctuation": "Ps",
    "Close_Punctuation": "Pe",
    "Initial_Punctuation": "Pi",
    "Final_Punctuation": "Pf",
    "Other_Punctuation": "Po",
    "Symbol": "S",
    "Math_Symbol": "Sm",
    "Currency_Symbol": "Sc",
    "Modifier_Symbol": "Sk",
    "Other_Symbol": "So",
    "Separator": "Z",
    "Space_Separator": "Zs",
    "Line_Separator": "Zl",
    "Paragraph_Separator": "Zp",
    "Other": "C",
    "Control": "Cc",
    "cntrl": "Cc",
    "Format": "Cf",
    "Surrogate": "Cs",
    "Private_Use": "Co",
}
_PROPERTY_HINT = (
    "RE2 knows the general categories (\\p{L}, \\p{Lu}, \\p{Nd}, \\p{P}, ... or their long names such as "
    "\\p{Letter}) and the scripts (\\p{Greek}, \\p{Script=Latin}), and their negations \\P{...}"
)
_LINEAR_HINT = (
    "patterns run in linear time on RE2: write the pattern without lookaround or backreferences, e.g. match the "
    "whole value with alternatives ('^(?:a|b)$') and check the rest with other schema keywords"
)
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported to the user, not logged to stderr


@dataclass(frozen=True, slots=True)
class RegexRefused(Exception):
    """A pattern Plait cannot run with its ECMA-262 meaning in linear time: why, and what to write instead."""

    reason: str
    hint: str

    def __str__(self) -> str:
        return self.reason


def translate(pattern: str) -> str:
    """`pattern` (ECMA-262) as an RE2 pattern with the same meaning; RegexRefused when there is none."""
    return _Reader(pattern).translate()


def compile_regex(pattern: str, max_mem: int) -> object:
    """The RE2 regex of the ECMA-262 `pattern`, its memory capped at `max_mem` bytes; RegexRefused
    when it cannot be translated or RE2 refuses it (too large, repetition over 1000)."""
    options = re2.Options()
    options.log_errors = False
    options.max_mem = max_mem
    translated = translate(pattern)
    try:
        return re2.compile(translated, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        if "repetition" in text or "too large" in text or "too big" in text:
            hint = (
                "RE2 allows repetition counts up to 1000 and patterns of a bounded size: use smaller counts "
                "({1,100} rather than {1,5000}) and check lengths with minLength / maxLength"
            )
        else:
            hint = "check the pattern's syntax: JSON Schema patterns are ECMA-262 regular expressions"
        raise RegexRefused(f"RE2 cannot run it: {text}", hint) from None


def has_lone_surrogate(text: str) -> bool:
    """Whether `text` holds a lone UTF-16 surrogate (JSON allows one, Unicode text does not)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class _Reader:
    """One pass over an ECMA-262 pattern, writing the RE2 pattern as it goes."""

    def __init__(self, pattern: str):
        self.text = pattern
        self.at = 0
        self.out: list[str] = []

    def translate(self) -> str:
        while self.at < len(self.text):
            self.out.append(self._term())
        return "".join(self.out)

    def _next(self) -> str:
        char = self.text[self.at]
        self.at += 1
        return char

    def _peek(self, count: int = 1) -> str:
        return self.text[self.at : self.at + count]

    def _term(self) -> str:
        char = self._next()
        if char == "\\":
            return self._escape()
        if char == "[":
            return self._class()
        if char == ".":
            return _class_text(_LINE_TERMINATORS, negated=True)
        if char == "$":
            return "\\z"
        if char == "(":
            return self._group()
        if char == "{":
            return self._brace()
        if char in "^)|*+?":
            return char
        return _literal(self._code_point(char))

    def _group(self) -> str:
        if self._peek() != "?":
            return "("
        head = self._peek(3)
        if head.startswith("?:"):
            self.at += 2
            return "(?:"
        if head.startswith(("?=", "?!", "?<=", "?<!")):
            kind = "lookbehind" if head.startswith("?<") else "lookahead"
            operator = "(" + (head if head.startswith("?<") else head[:2])
            raise RegexRefused(f"a {kind} {operator}...) is not supported", _LINEAR_HINT)
        if head.startswith("?<"):
            end = self.text.find(">", self.at)
            if end < 0:
                raise RegexRefused("a group name is not closed with '>'", "write a named group as (?<name>...)")
            self.at = end + 1
            return "("  # names mean nothing without backreferences
        raise RegexRefused(
            f"'(?{self._peek(2)[1:]}' is not part of JSON Schema's regex dialect (ECMA-262): inline flags are not "
            "supported",
            "write both cases out ('[Aa]') instead of (?i); for a group that captures nothing write (?:...)",
        )

    def _brace(self) -> str:
        """A `{n}`, `{n,}` or `{n,m}` quantifier as written; any other `{` is a literal brace."""
        end = self.text.find("}", self.at)
        body = self.text[self.at : end] if end >= 0 else ""
        low, comma, high = body.partition(",")
        if end >= 0 and low.isdigit() and (not high or high.isdigit()) and low.isascii() and high.isascii():
            self.at = end + 1
            return "{" + low + comma + high + "}"
        return "\\{"

    def _code_point(self, char: str) -> int:
        value = ord(char)
        if 0xD800 <= value <= 0xDFFF:
            raise RegexRefused(
                f"the pattern holds a lone surrogate (U+{value:04X}), which no Unicode text contains",
                "write an astral character itself, or as \\u{1F600}, or as its surrogate pair \\uD83D\\uDE00",
            )
        return value

    def _escape(self) -> str:
        if self.at >= len(self.text):
            raise RegexRefused("the pattern ends with a lone backslash", "write \\\\ for a backslash")
        char = self._next()
        if char in _CLASS_ESCAPES:
            return _class_text(_CLASS_ESCAPES[char], negated=False)
        if char.lower() in _CLASS_ESCAPES:
            return _class_text(_CLASS_ESCAPES[char.lower()], negated=True)
        if char in "bB":
            return "\\" + char  # both dialects: a boundary between ASCII word characters and the rest
        if char in "pP":
            return f"[{self._property(char, in_class=False)}]"
        if char.isdigit() and char != "0":
            raise RegexRefused(
                f"the backreference \\{char} is not supported",
                _LINEAR_HINT,
            )
        if char == "k":
            raise RegexRefused("the named backreference \\k<...> is not supported", _LINEAR_HINT)
        return _literal(self._character_escape(char))

    def _character_escape(self, char: str) -> int:
        """The code point of an escape that stands for one character (`\\n`, `\\x41`, `\\u00e9`, `\\.`)."""
        if char in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[char]
        if char == "0":
            if self._peek().isdigit():
                raise RegexRefused("octal escapes (\\01) are not supported", "write the character as \\x01")
            return 0
        if char == "x":
            digits = self._peek(2)
            if len(digits) == 2 and all(d in string.hexdigits for d in digits):
                self.at += 2
                return int(digits, 16)
            raise RegexRefused("\\x must be followed by two hex digits", "write \\x41, or \\u0041")
        if char == "u":
            return self._unicode_escape()
        if char == "c":
            letter = self._peek()
            if letter.isascii() and letter.isalpha():
                self.at += 1
                return ord(letter) % 32
            raise RegexRefused("\\c must be followed by a letter", "write a control character as \\cJ or \\x0A")
        if char in _SYNTAX or char == "-" or not (char.isalnum() or char == "_"):
            return self._code_point(char)  # an escaped character stands for itself
        raise RegexRefused(
            f"\\{char} is not an escape of JSON Schema's regex dialect (ECMA-262)",
            "write the character itself (\\\\ for a backslash); ^ and $ are the start and the end of the text, "
            "\\x{..} is written \\u{..} or \\uXXXX",
        )

    def _unicode_escape(self) -> int:
        if self._peek() == "{":
            end = self.text.find("}", self.at)
            digits = self.text[self.at + 1 : end] if end > 0 else ""
            if not digits or not all(d in string.hexdigits for d in digits) or int(digits, 16) > MAX_CODE_POINT:
                raise RegexRefused("\\u{...} must hold a hex code point up to 10FFFF", "write e.g. \\u{1F600}")
            self.at = end + 1
            return self._code_point(chr(int(digits, 16)))
        value = self._hex4()
        if 0xD800 <= value <= 0xDBFF and self._peek(2) == "\\u":
            mark = self.at
            self.at += 2
            low = self._hex4()
            if 0xDC00 <= low <= 0xDFFF:
                return 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
            self.at = mark
        return self._code_point(chr(value))

    def _hex4(self) -> int:
        digits = self._peek(4)
        if len(digits) != 4 or not all(d in string.hexdigits for d in digits):
            raise RegexRefused("\\u must be followed by four hex digits", "write \\u00E9, or \\u{E9}")
        self.at += 4
        return int(digits, 16)

    def _property(self, letter: str, *, in_class: bool) -> str:
        """`\\p{...}` / `\\P{...}` as class members (outside a class, a leading `^` may negate them)."""
        if self._peek() != "{":
            raise RegexRefused(f"\\{letter} must be followed by a property in braces", _PROPERTY_HINT)
        end = self.text.find("}", self.at)
        if end < 0:
            raise RegexRefused(f"\\{letter}{{ is not closed with '}}'", _PROPERTY_HINT)
        body = self.text[self.at + 1 : end]
        self.at = end + 1
        name, _, value = body.partition("=")
        if value and name in ("General_Category", "gc", "Script", "sc", "Script_Extensions", "scx"):
            body = value
        elif value:
            raise RegexRefused(f"the property \\{letter}{{{name}=...}} is not supported", _PROPERTY_HINT)
        body = _GENERAL_CATEGORIES.get(body, body)
        if body == "LC":  # RE2 has no cased-letter category: the three it consists of
            if letter == "p":
                return "\\p{Lu}\\p{Ll}\\p{Lt}"
            if in_class:
                raise RegexRefused(
                    "\\P{LC} inside a character class is not supported", "write [^\\p{Lu}\\p{Ll}\\p{Lt}]"
                )
            return "^\\p{Lu}\\p{Ll}\\p{Lt}"
        written = f"\\{letter}{{{body}}}"
        try:
            re2.compile(written, _OPTIONS)
        except re2.error:
            raise RegexRefused(f"the property {written} is not one RE2 knows", _PROPERTY_HINT) from None
        return written

    def _class(self) -> str:
        negated = self._peek() == "^"
        if negated:
            self.at += 1
        ranges: list[tuple[int, int]] = []
        properties: list[str] = []
        while True:
            if self.at >= len(self.text):
                raise RegexRefused("a character class '[' is not closed with ']'", "close it, or write \\[ for '['")
            if self._peek() == "]":
                self.at += 1
                return _class_text(tuple(ranges), negated, properties)
            low = self._class_atom()
            if self._peek() == "-" and self._peek(2) not in ("-]", "-"):
                self.at += 1
                high = self._class_atom()
                if not isinstance(low, int) or not isinstance(high, int):
                    raise RegexRefused(
                        "a class range cannot start or end with \\d, \\w, \\s or \\p{...}",
                        "put '-' last in the class to mean a hyphen: [\\d-]",
                    )
                if high < low:
                    raise RegexRefused(
                        f"the class range {chr(low)!r}-{chr(high)!r} is out of order", "write the lower end first"
                    )
                ranges.append((low, high))
            elif isinstance(low, int):
                ranges.append((low, low))
            elif isinstance(low, str):
                properties.append(low)
            else:
                ranges.extend(low)

    def _class_atom(self) -> int | str | Ranges:
        """One class member: a code point, the ranges of `\\d`-like escapes, or a `\\p{...}` member."""
        char = self._next()
        if char != "\\":
            return self._code_point(char)
        if self.at >= len(self.text):
            raise RegexRefused("the pattern ends with a lone backslash", "write \\\\ for a backslash")
        escape = self._next()
        if escape.lower() in _CLASS_ESCAPES:
            members = _CLASS_ESCAPES[escape.lower()]
            return members if escape.islower() else _complement(members)
        if escape in "pP":
            return self._property(escape, in_class=True)
        if escape.isdigit() and escape != "0":
            raise RegexRefused(f"\\{escape} in a character class is not supported", "write the character as \\xHH")
        return 0x08 if escape == "b" else self._character_escape(escape)


def _complement(ranges: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    start = 0
    for low, high in _merged(ranges):
        if low > start:
            out.append((start, low - 1))
        start = high + 1
    if start <= MAX_CODE_POINT:
        out.append((start, MAX_CODE_POINT))
    return tuple(out)


def _merged(ranges: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if out and low <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return tuple(out)


def _class_text(ranges: Ranges, negated: bool, properties: list[str] | tuple[str, ...] = ()) -> str:
    """An RE2 class of explicit code-point ranges (never empty: `[]` matches nothing, `[^]` anything)."""
    members = "".join(
        f"\\x{{{low:X}}}" if low == high else f"\\x{{{low:X}}}-\\x{{{high:X}}}" for low, high in _merged(ranges)
    )
    members += "".join(properties)
    if not members:
        return "[\\x{0}-\\x{10FFFF}]" if negated else "[^\\x{0}-\\x{10FFFF}]"
    return f"[{'^' if negated else ''}{members}]"


def _literal(code_point: int) -> str:
    char = chr(code_point)
    if char.isascii() and char.isalnum():
        return char
    if char.isascii() and char in string.punctuation:
        return "\\" + char
    if code_point < 0x80 or not char.isprintable():
        return f"\\x{{{code_point:X}}}"
    return char
