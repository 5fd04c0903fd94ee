"""Text written out whatever its characters: file names are decoded with
surrogateescape (a path's bytes that are not UTF-8 become U+DC80-U+DCFF),
and a JSON report or profile document someone hands to diff or --from
may hold any lone surrogate ("\\ud800"). Neither may end a report in a
UnicodeEncodeError.

ERRORS, an encoding error handler: a surrogateescape character goes out
as the byte it stands for (the path as the file system has it, as ls
prints it), any other lone surrogate as the text \\udXXX."""

import codecs

ERRORS = "allocsites-bytes"


def _bytes_or_escape(exc):
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = bytearray()
    for c in exc.object[exc.start:exc.end]:
        code = ord(c)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(code - 0xDC00)
        else:
            out += ("\\u%04x" % code).encode("ascii")
    return bytes(out), exc.end


codecs.register_error(ERRORS, _bytes_or_escape)


def reconfigure(stream):
    """stream (sys.stdout) writes with ERRORS, where it can be told to."""
    if hasattr(stream, "reconfigure"):
        stream.reconfigure(errors=ERRORS)


def utf8(text):
    """text as valid UTF-8 bytes (profile.proto's strings, XML): what
    ERRORS would write as other bytes becomes U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", ERRORS).decode(
            "utf-8", "replace").encode("utf-8")


_CONTROL = {c: "\\x%02x" % c for c in list(range(0x20)) + [0x7f]}


def printable(name):
    """A name someone else's bytes gave (a tag's in a binary, a guest
    file's or function's from the traced program) with its control
    characters escaped (\\x0a): a newline in one split the table's row
    and the folded line."""
    return name.translate(_CONTROL)
