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
    head = "\n".join(f"{k.capitalize()}: {meta[k]}" for k in ("subject", "from", "date") if k in meta)
    return f"{head}\n\n{content.strip()}".strip(), meta


def read_eml(path: Path, data: bytes, config: DocumentsConfig, notes: list[str]) -> list[Document]:
    text, meta = message_text(email.message_from_bytes(data, policy=email.policy.default))
    if not text:
        raise InputError(f"{path} is an empty e-mail message (no headers, no body); remove it from the inputs")
    return [new_document(text, str(path), metadata=meta)]


def read_mbox(path: Path, data: bytes, config: DocumentsConfig, notes: list[str]) -> list[Document]:
    box = mailbox.mbox(
        path,
        create=False,
        factory=lambda f: email.message_from_binary_file(f, policy=email.policy.default),  # type: ignore[call-overload]  # typeshed: mailbox passes a binary file
    )
    docs = []
    try:
        for n, msg in enumerate(box, 1):
            text, meta = message_text(msg)
            if text:
                docs.append(new_document(text, str(path), units=[(f"message {n}", 0)], metadata=meta))
    finally:
        box.close()
    if not docs:
        raise InputError(f"{path} holds no e-mail message with text; remove it from the inputs")
    return docs
