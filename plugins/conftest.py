"""The plugins' tests run under the same fixtures as turnwire's own: a fixed envelope secret,
and every rendered body checked against the official SDK types."""

from tests.conftest import _envelope_secret, _every_render_is_checked_by_the_oracle

__all__ = ["_envelope_secret", "_every_render_is_checked_by_the_oracle"]
