"""Contacts' input rules: networks, identity normalisation, uploaded address books.

An identity is a network and an id on it. Before anything is stored or
compared, the id is normalised so that the same person written two ways is one
identity:

- ``tel``: E.164, ``+`` and 7-15 digits (spaces, dashes, dots, slashes and
  parentheses dropped, as is the "(0)" of "+44 (0)79 ..."; a ``00``
  international prefix becomes ``+``; a national number with one leading ``0``
  gets the configured country calling code);
- ``email``: trimmed and lower-cased, then checked as an address;
- ``fb``: a numeric Facebook user id.

Each failure is ``BAD_USER_INPUT`` naming its field. The identity these
produce, and its hash, are in ``identity.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gateway.errors import BadUserInput
from gateway.graph import validation
from gateway.graph.validation import EMAIL

NETWORKS: tuple[str, ...] = ("tel", "email", "fb")

_PHONE_PUNCTUATION = re.compile(r"[\s\-.()/]")
_E164_DIGITS = re.compile(r"[1-9][0-9]{6,14}")
_FB_ID = re.compile(r"[0-9]{1,20}")
_COUNTRY_CODE = re.compile(r"[1-9][0-9]{0,2}")
#: Longer input than any id of any network is refused before any regex runs.
RAW_ID_MAX = 254
MAX_CONTACTS_PER_UPLOAD = 5000
NAME_MAX = 100


@dataclass(frozen=True)
class UploadedContact:
    network_id: str
    name: str | None


def network(value: str, field: str = "network") -> str:
    result = value.strip().lower()
    if result not in NETWORKS:
        raise BadUserInput(field, f"`{field}` must be one of: {', '.join(NETWORKS)}.")
    return result


def country_code(value: str) -> str:
    """A country calling code setting: "" (none) or 1-3 digits, with or without ``+``."""
    code = value.strip().removeprefix("+")
    if code and not _COUNTRY_CODE.fullmatch(code):
        raise ValueError(f"GATEWAY_CONTACTS_DEFAULT_COUNTRY_CODE must be 1-3 digits, got {value!r}")
    return code


def phone(value: str, field: str, default_country_code: str = "") -> str:
    digits = _PHONE_PUNCTUATION.sub("", value.replace("(0)", ""))
    if digits.startswith("+"):
        digits = digits[1:]
    elif digits.startswith("00"):
        digits = digits[2:]
    elif digits.startswith("0") and default_country_code:
        digits = default_country_code + digits[1:]
    else:
        hint = "" if default_country_code else " (+<country code><number>)"
        raise BadUserInput(field, f"`{field}` must be a phone number in international format{hint}.")
    if not _E164_DIGITS.fullmatch(digits):
        raise BadUserInput(field, f"`{field}` must be a phone number of 7-15 digits after the country code.")
    return "+" + digits


def normalise(network_name: str, value: str, field: str, default_country_code: str = "") -> str:
    """The canonical form of an id on ``network_name`` (already validated)."""
    raw = value.strip()
    if not raw:
        raise BadUserInput(field, f"`{field}` must not be empty.")
    if len(raw) > RAW_ID_MAX:
        raise BadUserInput(field, f"`{field}` must be at most {RAW_ID_MAX} characters.")
    if network_name == "tel":
        return phone(raw, field, default_country_code)
    if network_name == "email":
        address = raw.lower()
        if not EMAIL.fullmatch(address):
            raise BadUserInput(field, f"`{field}` must be a valid email address.")
        return address
    if network_name == "fb":
        if not _FB_ID.fullmatch(raw):
            raise BadUserInput(field, f"`{field}` must be a numeric Facebook id.")
        return raw
    raise AssertionError(f"unknown network {network_name!r}")


def address_book(
    network_name: str, contacts: Sequence[UploadedContact], default_country_code: str = ""
) -> list[UploadedContact]:
    """An upload's entries with their ids normalised and names checked, in upload order
    (``network_name`` already validated)."""
    if len(contacts) > MAX_CONTACTS_PER_UPLOAD:
        raise BadUserInput("contacts", f"At most {MAX_CONTACTS_PER_UPLOAD} contacts per upload.")
    return [
        UploadedContact(
            normalise(network_name, contact.network_id, f"contacts[{i}].networkId", default_country_code),
            None
            if contact.name is None
            else validation.text(contact.name, f"contacts[{i}].name", max_len=NAME_MAX),
        )
        for i, contact in enumerate(contacts)
    ]
