"""Shared readers: TSV/CSV rows with line numbers, and the deterministic hold-out."""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from trainables.tasks.base import DataError

csv.field_size_limit(10_000_000)


def read_rows(
    path: Path, columns: Sequence[str], delimiter: str = "\t", quoting: int = csv.QUOTE_NONE
) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line number, row)`` for a file whose header names at least ``columns``.

    Blank lines are skipped; a row with a different field count than the header,
    a broken quote or bytes that are not UTF-8 raise :class:`DataError` naming the line.
    """
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f, delimiter=delimiter, quoting=quoting, strict=True)
        try:
            header = next(reader, None)
            if header is None:
                raise DataError(f"{path}: empty file, expected a header with {', '.join(columns)}")
            missing = [c for c in columns if c not in header]
            if missing:
                raise DataError(f"{path}:1: header {header} lacks column(s) {', '.join(missing)}")
            for row in reader:
                if not row:
                    continue
                if len(row) != len(header):
                    raise DataError(
                        f"{path}:{reader.line_num}: {len(row)} fields, expected {len(header)} ({', '.join(header)})"
                    )
                yield reader.line_num, dict(zip(header, row))
        except csv.Error as exc:
            raise DataError(f"{path}:{reader.line_num + 1}: unreadable row ({exc})") from None
        except UnicodeDecodeError:  # its position counts from the decoder's buffer, not from the file
            raise not_utf8(path) from None


def not_utf8(path: Path) -> DataError:
    """The error naming the line and column of the first byte in ``path`` that is not UTF-8."""
    raw = path.read_bytes()
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - raw.rfind(b"\n", 0, exc.start)
        return DataError(
            f"{path}:{line}: byte 0x{raw[exc.start]:02x} at column {column} is not UTF-8 (save the file as UTF-8)"
        )
    return DataError(f"{path}: not UTF-8 text")


def held_out(key: str, modulus: int) -> bool:
    """Deterministic hold-out: ``sha1(key) % modulus == 0`` (about 1/modulus of the keys)."""
    return int(hashlib.sha1(key.encode("utf-8")).hexdigest(), 16) % modulus == 0


def label_index(value: str, labels: Sequence[str], where: str) -> int:
    try:
        return list(labels).index(value)
    except ValueError:
        raise DataError(f"{where}: unknown label {value!r}, expected one of {', '.join(labels)}") from None
