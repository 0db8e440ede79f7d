"""Secrets in the words people use (issue 30, item 4): everyday phrasings, disguises,
checked numbers, and what is left alone. The same sentences run through every door and
store in ``tests/test_secrets_scan.py`` (its corpus holds ``everyday()``); here each is
checked where it is first redacted, freshly generated each run.
"""

from __future__ import annotations

import pytest

from evals.bench.redaction import run as redaction_run
from evals.locomo import default_dir
from retrieval.credentials import find_credentials, redact
from tests.test_secrets_scan import everyday

CASES = everyday()


@pytest.mark.parametrize("secret", CASES, ids=[c.shape for c in CASES])
def test_an_everyday_or_disguised_secret_leaves_no_part_behind(secret):
    clean = redact(secret.text)
    assert "[REDACTED:" in clean
    assert not any(part in clean for part in secret.parts()), clean


@pytest.mark.parametrize("text", [
    "The pass is open in summer, so we drove over it.",
    "Check the user / group permissions on the folder.",
    "I passed the exam with 92 points!",
    "Her password manager is 1Password.",
    "The key takeaway from the meeting: ship on Friday.",
    "We met on 2023-05-08 13:56 and again at 10:30 on 2023-06-01.",
    "The order number is 1234567890123 and the tracking id is 9400111899223197428490.",
    "Mount Everest is 8,849 m tall; the flight was UA 1234 at gate B12.",
    "the secret fix is in 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f",
    "Asia is the largest continent; Akiak is a town in Alaska.",
])
def test_prose_that_only_sounds_like_a_secret_is_left_alone(text):
    assert find_credentials(text) == [], redact(text)


def test_a_secret_in_full_width_or_split_by_zero_width_characters_is_redacted_whole():
    token = "ghp" + "_" + "Q7wErT9yUiOp3aSdFgHjKlZxC8vBnM1q2w3e"
    full_width = "".join(chr(ord(c) + 0xFEE0) for c in token)
    split = "\u200b".join(token)
    for text in (f"token {full_width} here", f"token {split} here"):
        (match,) = find_credentials(text)
        assert text[match.start:match.end] in (full_width, split) and match.kind == "github_token"


def test_phone_numbers_and_email_addresses_are_redacted_by_default_and_can_be_kept():
    text = "Call Dana on (415) 867-5309 or write to dana@fernwood.org."
    assert redact(text) == "Call Dana on [REDACTED:phone] or write to [REDACTED:email]."
    assert redact(text, pii=("payment_card", "national_id")) == text


def test_an_iban_is_redacted_only_when_its_checksum_holds():
    assert redact("IBAN DE89 3704 0044 0532 0130 00 please") == "IBAN [REDACTED:bank_account] please"
    assert redact("ref DE89 3704 0044 0532 0130 01") == "ref DE89 3704 0044 0532 0130 01"


@pytest.mark.skipif(not (default_dir() / "conv-26.json").exists(), reason="LoCoMo dataset not present")
def test_the_locomo_conversations_lose_at_most_half_a_percent_of_their_turns():
    report = redaction_run([str(default_dir())], ("payment_card", "national_id", "bank_account", "email", "phone"))
    assert report["turns"] > 2000
    assert report["met"], report
