"""E-mail: one .eml message, or an .mbox export as one document per message (the stdlib `email`)."""

from __future__ import annotations

import email
import email.policy
import mailbox
import re
from pathlib import Path

from tiny_graphrag.config import DocumentsConfig
from tiny_graphrag.errors import InputError
from tiny_graphrag.records import Document, new_document

HEADERS = ("subject", "from", "to", "date")
_HTML_TAG = re.compile(r"<[^>]+>")
CHARSET_FIX = (
    "its text declares a character set Python does not know ({}). To fix: set the charset= of its Content-Type "
    "header to the one it is written in (e.g. utf-8 or windows-1252)"
)


def message_text(msg: email.message.Message) -> tuple[str, dict[str, str]]:
    """The text indexed for a message (its headers, then its body) and its headers as metadata."""
    meta = {h: " ".join(str(msg.get(h, "")).split()) for h in HEADERS}
    meta = {k: v for k, v in meta.items() if v}
    body = msg.get_body(preferencelist=("plain", "html")) if hasattr(msg, "get_body") else None
    content = body.get_content() if body is not None else ""
    if body is not None and body.get_content_subtype() == "html":
        try:
            from .web import html_text

            content = html_text(content)
        except ImportError:  # without trafilatura an HTML-only mail still gives its words
            content = _HTML_TAG.sub(" ", content)
    for part in msg.iter_attachments() if hasattr(msg, "iter_attachments") else ():
        if part.get_content_type() == "message/rfc822":  # a forwarded message: its text is part of this one
            content += "\n\n" + message_text(part.get_content())[0]
    head = "\n".join(f"{k.capitalize()}: {meta[k]}" for k in ("subject", "from", "date") if k in meta)
    return f"{head}\n\n{content.strip()}".strip(), meta


def read_eml(path: Path, data: bytes, config: DocumentsConfig, notes: list[str]) -> list[Document]:
    try:
        text, meta = message_text(email.message_from_bytes(data, policy=email.policy.default))
    except LookupError as exc:  # an unknown charset
        raise InputError(f"{path} was not read: {CHARSET_FIX.format(exc)}, or leave it out of the inputs") from exc
    if not text:
        raise InputError(f"{path} is an empty e-mail message (no headers, no body); remove it from the inputs")
    return [new_document(text, str(path), metadata=meta)]


def read_mbox(path: Path, data: bytes, config: DocumentsConfig, notes: list[str]) -> list[Document]:
    box = mailbox.mbox(
        path,
        create=False,
        factory=lambda f: email.message_from_binary_file(f, policy=email.policy.default),  # type: ignore[call-overload]  # typeshed: mailbox passes a binary file
    )
    docs, unread = [], []
    try:
        for n, msg in enumerate(box, 1):
            try:
                text, meta = message_text(msg)
            except LookupError as exc:  # one message of an unknown charset: the others are still read
                unread.append(f"{path}, message {n} was not indexed: {CHARSET_FIX.format(exc)}")
                continue
            if text:
                docs.append(new_document(text, str(path), units=[(f"message {n}", 0)], metadata=meta))
    finally:
        box.close()
    if not docs:
        raise InputError("; ".join(unread) or f"{path} holds no e-mail message with text; remove it from the inputs")
    notes += unread
    return docs
