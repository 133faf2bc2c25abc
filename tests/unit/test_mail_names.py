"""Attachment names and types: what a client sent, made safe to store and serve."""

from __future__ import annotations

import pytest

from gateway.mail.names import (
    FALLBACK_FILENAME,
    MAX_FILENAME,
    OCTET_STREAM,
    content_disposition,
    content_type_of,
    decode_client_filename,
    download_path,
    sanitize_filename,
    unique_filenames,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\photo.jpg", "photo.jpg"),
        ("  .hidden.  ", "hidden"),
        ("bell\x07and\nnewline.txt", "bellandnewline.txt"),
        ("", FALLBACK_FILENAME),
        (None, FALLBACK_FILENAME),
        ("...", FALLBACK_FILENAME),
        ("dir/", FALLBACK_FILENAME),
        ("Cafe\u0301.txt", "Caf\u00e9.txt"),  # NFC
    ],
)
def test_sanitize_filename(raw: str | None, expected: str) -> None:
    assert sanitize_filename(raw) == expected


def test_long_names_keep_their_extension() -> None:
    name = sanitize_filename("x" * 400 + ".tar.gz")
    assert len(name) == MAX_FILENAME
    assert name.endswith(".gz")
    assert len(sanitize_filename("y" * 400)) == MAX_FILENAME


def test_percent_encoded_names_are_decoded_once() -> None:
    assert decode_client_filename("R%C3%A9sum%C3%A9.pdf") == "Résumé.pdf"
    assert decode_client_filename("Résumé.pdf") == "Résumé.pdf"
    assert decode_client_filename("100%.txt") == "100%.txt"
    # Invalid UTF-8 behind valid escapes stays as sent.
    assert decode_client_filename("bad%FF.txt") == "bad%FF.txt"


def test_names_within_one_email_are_made_distinct() -> None:
    assert unique_filenames(["a.pdf", "a.pdf", "b", "b", "a.pdf", ".env", ".env"]) == [
        "a.pdf",
        "a (2).pdf",
        "b",
        "b (2)",
        "a (3).pdf",
        ".env",
        ".env (2)",
    ]


@pytest.mark.parametrize(
    ("declared", "filename", "expected"),
    [
        ("image/PNG", "x.bin", "image/png"),
        ("text/plain; charset=utf-8", "x", "text/plain"),
        (None, "photo.jpg", "image/jpeg"),
        (OCTET_STREAM, "notes.txt", "text/plain"),
        ("not a type", "file.unknownext", OCTET_STREAM),
        ("text/html\r\nX-Injected: 1", "page", OCTET_STREAM),
    ],
)
def test_content_type_of(declared: str | None, filename: str, expected: str) -> None:
    assert content_type_of(declared, filename) == expected


def test_content_disposition_has_a_safe_ascii_fallback_and_the_exact_name() -> None:
    header = content_disposition('Résumé "final";.pdf')
    assert header.startswith('attachment; filename="Resume _final__.pdf"; ')
    assert header.endswith("filename*=UTF-8''R%C3%A9sum%C3%A9%20%22final%22%3B.pdf")
    assert "\n" not in content_disposition("a\nb")
    assert content_disposition("日本.txt").startswith('attachment; filename=".txt"')
    assert content_disposition("日本").startswith(f'attachment; filename="{FALLBACK_FILENAME}"')


def test_download_path_escapes_the_name() -> None:
    assert download_path("id", "a b/c?.txt") == "/attachments/id/a%20b%2Fc%3F.txt"
