"""The options several commands share, and what the commands make of them: the settings and
container (``--config``, ``--profile``, ``--set``, ``--trace``), the render context, the output
schema, the store (``--store``), and the warnings shown about them."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from turnwire.cli.printer import echo
from turnwire.errors import ConfigError, validation_location

__all__ = [
    "Attached",
    "check_context_read",
    "config_files",
    "config_options",
    "container",
    "logging_options",
    "open_store",
    "output_schema",
    "render_context",
    "show_warnings",
    "summarise_warnings",
]


class _Renamed(argparse.Action):
    """An option with a new name and the one it had before: the old spelling still works, for
    one version, with a warning that names the new one."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        self.appends = kwargs.pop("append", False)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        new = self.option_strings[0]
        if option_string is not None and option_string != new:
            echo(
                f"turnwire: warning: {option_string} is deprecated: use {new} (the same value)",
                file=sys.stderr,
            )
        if self.appends:
            values = [*(getattr(namespace, self.dest, None) or []), values]
        setattr(namespace, self.dest, values)


class Attached(argparse.Action):
    """``--file``, ``--file-url`` and ``--file-id`` into one list, in the order given: each
    entry the option and its value (the question's files keep that order)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given = [*(getattr(namespace, self.dest, None) or []), (option_string, values)]
        setattr(namespace, self.dest, given)


def renamed(parser: Any, new: str, old: str, **kwargs: Any) -> None:
    """Add option ``new`` to ``parser``, taking ``old`` too (see :class:`_Renamed`)."""
    appends = kwargs.pop("action", None) == "append"
    parser.add_argument(new, old, action=_Renamed, append=appends, **kwargs)


def logging_options(*, top: bool) -> argparse.ArgumentParser:
    """-v / --quiet / --trace, accepted before the subcommand and after it."""
    options = argparse.ArgumentParser(add_help=False)
    # Below the subcommand the defaults are suppressed, so they never undo what was given above.
    default: Any = False if top else argparse.SUPPRESS
    loudness = options.add_mutually_exclusive_group()
    loudness.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=default,
        help="log every warning (each render warning, retries, plugin notes) to stderr",
    )
    loudness.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=default,
        help="print errors only: no warnings, no summary lines",
    )
    options.add_argument(
        "--trace",
        action="store_true",
        default=default,
        help="log every stage call to stderr (sets plugins.trace: true)",
    )
    return options


def config_options(*, example: str) -> argparse.ArgumentParser:
    """--config / --profile / --set, for every command that builds settings."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="a configuration profile, merged over the defaults (repeatable)",
    )
    options.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="NAME",
        help="a profile shipped with turnwire, by name (production, local-dev, strict-media, "
        "examples; the providers azure, openrouter, groq, vllm, ollama, lmstudio, llamacpp, "
        "openresponses); merged before the --config files (repeatable)",
    )
    options.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"one setting, as a YAML value ({example}); repeatable, applied last",
    )
    renamed(
        options,
        "--render-context",
        "--context",
        action="append",
        default=[],
        dest="render_context",
        metavar="KEY=VALUE",
        help="a render-context value stages may ask for (with render.system_prompt_template: "
        "true, {KEY} in the system prompt); repeatable (--context: its name before, deprecated)",
    )
    return options


def _overrides(assignments: Sequence[str]) -> dict[str, Any]:
    """``--set a.b=value`` assignments as one settings layer (values parsed as YAML, within the
    limits of configuration files)."""
    from turnwire.config.settings import CONFIG_FILES, merge

    tree: dict[str, Any] = {}
    for assignment in assignments:
        key, equals, raw = assignment.partition("=")
        if not equals or not key or any(not part for part in key.split(".")):
            raise ConfigError(
                f"--set {assignment!r}: write KEY=VALUE, such as request.temperature=0.2"
            )
        value: Any = (
            CONFIG_FILES.parse(raw.encode(), name=f"--set {key}", format="yaml") if raw else ""
        )
        for part in reversed(key.split(".")):
            value = {part: value}
        tree = merge(tree, value)
    return tree


def config_files(args: argparse.Namespace) -> list[Any]:
    """The shipped profiles named by --profile, then the --config files, in order."""
    from turnwire.config.settings import profile_path

    files = getattr(args, "config", None) or getattr(args, "files", [])
    return [*(profile_path(name) for name in getattr(args, "profile", [])), *files]


def container(args: argparse.Namespace) -> Any:
    """The container the options describe; ``--trace`` turns stage tracing on."""
    from turnwire import build_container
    from turnwire.config.settings import merge

    layer = _overrides(getattr(args, "set", []))
    if getattr(args, "trace", False):  # --trace turns tracing on, whatever the profile says
        layer = merge(layer, {"plugins": {"trace": True}})
    built = build_container(config_files(args), overrides=layer)
    if built.settings().plugins.trace:  # and a profile that turns it on is shown too
        logging.getLogger("turnwire.trace").setLevel(logging.DEBUG)
    return built


def render_context(args: argparse.Namespace) -> dict[str, str]:
    """``--render-context KEY=VALUE`` pairs (values stay strings)."""
    values: dict[str, str] = {}
    for assignment in getattr(args, "render_context", []):
        key, equals, value = assignment.partition("=")
        if not equals or not key.isidentifier():
            raise ConfigError(
                f"--render-context {assignment!r}: write KEY=VALUE with a name for KEY, such as "
                "--render-context user=Ana"
            )
        values[key] = value
    return values


def output_schema(args: argparse.Namespace) -> Any:
    """The ``--output-schema`` file as an :class:`~turnwire.OutputSchema`."""
    location = getattr(args, "output_schema", None)
    if not location:
        return None
    import msgspec

    from turnwire import OutputSchema
    from turnwire.config.settings import CONFIG_FILES
    from turnwire.errors import OutputSchemaError
    from turnwire.files.loading import format_for
    from turnwire.model.structured import schema_name

    path = Path(location)
    data = CONFIG_FILES.parse(CONFIG_FILES.read(path), name=str(path), format=format_for(path))
    if not isinstance(data, dict):
        raise OutputSchemaError(f"--output-schema {location}: the file must hold a mapping")
    wrapped = isinstance(data.get("schema"), dict) and set(data) <= {
        "name",
        "schema",
        "strict",
        "description",
    }
    if not wrapped:
        data = {"name": schema_name(data.get("title", path.stem)), "schema": data}
    try:
        return msgspec.convert(data, OutputSchema)
    except msgspec.ValidationError as err:
        where, detail = validation_location(err)
        raise OutputSchemaError(
            f"--output-schema {location}: {where}: {detail}", path=where
        ) from err


def open_store(args: argparse.Namespace, location: str | None = None) -> Any:
    """The store ``location``, else ``--store``, else the one the settings name."""
    from turnwire import load_settings
    from turnwire import open_store as opened
    from turnwire.errors import StoreError
    from turnwire.store.postgres import is_postgres_url

    settings = load_settings(getattr(args, "config", ())).store
    explicit = location or getattr(args, "store", None) or settings.where
    if explicit and not is_postgres_url(explicit):
        folder = Path(explicit).expanduser().resolve().parent
        if not folder.is_dir():
            # A typo in --store must not quietly start a new, empty store somewhere else.
            raise StoreError(f"the store's folder {folder} does not exist; create it first")
    return opened(explicit or None, folder=settings.folder)


def show_warnings(args: argparse.Namespace) -> None:
    """An inspection command shows what loading found (a plugin name no plugin has, a
    plugin's settings no plugin reads), not only -v."""
    if not args.quiet:
        logging.getLogger("turnwire").setLevel(logging.WARNING)


def summarise_warnings(args: argparse.Namespace, warnings: Sequence[str]) -> None:
    """At the default level, one line for what -v would show in full."""
    if not warnings or args.verbose or args.quiet:
        return
    more = f" (and {len(warnings) - 1} more)" if len(warnings) > 1 else ""
    echo(f"turnwire: warning: {warnings[0]}{more}; -v shows each", file=sys.stderr)


def check_context_read(args: argparse.Namespace, built: Any) -> None:
    """--render-context with nothing to read it: the built-in system prompt fills its
    placeholders only under ``render.system_prompt_template``, and no plugin stage takes the
    values."""
    if not getattr(args, "render_context", None) or args.quiet:
        return
    if built.settings().render.system_prompt_template:
        return
    hook = built.plugin_manager().hook
    for name in dir(hook):
        caller = getattr(hook, name)
        for impl in getattr(caller, "get_hookimpls", list)():
            module = getattr(impl.function, "__module__", "") or ""
            if "render_context" in impl.argnames and not module.startswith("turnwire.stages"):
                return  # a plugin's stage reads them
    echo(
        "turnwire: warning: --render-context is not used: render.system_prompt_template is off and "
        "no plugin stage reads render_context (--set render.system_prompt_template=true fills "
        "the prompt's {name} placeholders)",
        file=sys.stderr,
    )
