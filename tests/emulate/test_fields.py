"""The emulator's field table is the installed official types' (see fields_oracle.py)."""

from __future__ import annotations

from .fields_oracle import FIELDS, encoded


def test_the_field_table_matches_the_installed_openai_types():
    assert FIELDS.read_text(encoding="utf-8") == encoded(), (
        "write it again: uv run python -m tests.emulate.fields_oracle"
    )
