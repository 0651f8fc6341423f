"""Key values never reach a file or a log: every key read is remembered, and stored or printed text is redacted.

A server's error message may echo the key it was sent (``invalid api key sk-…``); that text became a trial's or an
episode's error in ``trials.jsonl`` / ``episodes.jsonl`` and a log line. :func:`mimesis_pl.llm.api_key`, the one
place a key is read (D12), calls :func:`remember_secret`; :func:`redact_secrets` replaces every remembered value,
and is applied where errors are shown (HTTP error excerpts), stored (the evaluation's file writers) and logged
(a log-record factory installed with the first key) (decision D22).
"""

from __future__ import annotations

import logging
import threading

REMOVED = "[key removed]"
#: Shorter values are not redacted: they would cut ordinary words out of text (real keys are far longer).
MIN_LENGTH = 8

_known: set[str] = set()
_lock = threading.Lock()
_factory_installed = False


def remember_secret(value: str | None) -> None:
    """Redact ``value`` from every text :func:`redact_secrets` sees from now on (and from log records)."""
    if not value or len(value) < MIN_LENGTH:
        return
    with _lock:
        _known.add(value)
    _install_log_redaction()


def redact_secrets(text: str) -> str:
    """``text`` with every remembered key value replaced by ``[key removed]`` (longest first)."""
    if not _known or not text:
        return text
    for value in sorted(_known, key=len, reverse=True):
        if value in text:
            text = text.replace(value, REMOVED)
    return text


def _install_log_redaction() -> None:
    """Wrap the log-record factory once: a record's message and exception text are redacted when it is made."""
    global _factory_installed
    with _lock:
        if _factory_installed:
            return
        _factory_installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args, **kwargs) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 -- a malformed record is the logger's to report, as it is
            return record
        redacted = redact_secrets(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = redact_secrets(logging.Formatter().formatException(record.exc_info))
        return record

    logging.setLogRecordFactory(factory)
