"""The documentation: every hook, field, configuration key and command is documented, the
examples are valid, and the site builds with warnings as errors."""

from __future__ import annotations

import argparse
import html
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from jsonschema import Draft202012Validator

from scripts import docs_pages
from turnwire import errors, hookspecs, load_settings
from turnwire.cli.main import _parser
from turnwire.config.schema import config_schema, thread_schema
from turnwire.config.settings import Settings

from .conftest import REPO, turnwire_process


def undocumented(function: Any) -> list[str]:
    """What a hookspec's docstring lacks: a summary, a ``:param:`` per argument, ``:returns:``,
    how results combine, when it runs, and its built-in default (CONVENTIONS.md)."""
    doc = inspect.getdoc(function) or ""
    missing = [] if doc.split("\n", 1)[0].strip() else ["a one-line summary"]
    for name in inspect.signature(function).parameters:
        if not re.search(rf"^:param {name}:", doc, re.MULTILINE):
            missing.append(f":param {name}:")
    if not re.search(r"^:returns:", doc, re.MULTILINE):
        missing.append(":returns:")
    spec = getattr(function, "turnwire_spec", {})
    semantics = (
        "Stops at the first non-None result."
        if spec.get("firstresult")
        else "Calls every implementation"
    )
    for sentence in (semantics, "Runs ", "Default:"):
        if sentence not in " ".join(doc.split()):
            missing.append(sentence)
    return missing


def test_the_docstring_check_finds_what_is_missing():
    def half_documented(thread, model):
        """Do something.

        :param thread: the thread.

        Runs once per request.
        """

    assert undocumented(half_documented) == [
        ":param model:",
        ":returns:",
        "Calls every implementation",
        "Default:",
    ]
    assert undocumented(lambda: None)[0] == "a one-line summary"
    half_documented.turnwire_spec = {"firstresult": True}  # type: ignore[attr-defined]
    assert "Stops at the first non-None result." in undocumented(half_documented)


def test_every_hookspec_is_found_in_declaration_order():
    names = docs_pages.hook_names()
    assert names == [*hookspecs.STAGES, *hookspecs.CLIENT_HOOKS]


@pytest.mark.parametrize("name", docs_pages.hook_names())
def test_every_hookspec_documents_its_arguments_and_its_result(name):
    assert undocumented(getattr(hookspecs, name)) == []


def test_the_hook_reference_renders_every_hook():
    page = docs_pages.hooks_reference()
    for name in docs_pages.hook_names():
        assert f"\n::: turnwire.hookspecs.{name}\n" in page, name
        assert f"| [`{name}`](#{name}) |" in page, name
    assert (
        "| [`render_memories`](#render_memories) | first non-None | Runs once per request" in page
    )
    assert "| [`on_prompt_assembled`](#on_prompt_assembled) | all collected |" in page


def _section(page: str, heading: str) -> str:
    start = page.index(f"\n## {heading}\n")
    end = page.find("\n## ", start + 1)
    return page[start : end if end > 0 else None]


def test_the_thread_reference_has_every_record_and_field():
    page = docs_pages.thread_reference()
    schema = thread_schema()
    records = {"Thread": schema, **schema["$defs"]}
    assert len(records) >= 16
    for name, definition in records.items():
        section = _section(page, name)
        for field, value in definition["properties"].items():
            row = next(line for line in section.splitlines() if line.startswith(f"| `{field}` |"))
            assert value["description"].split("`")[0] in row, (name, field)
    # Fields no hand-written page describes are here, with their meaning.
    for field in ("stash", "modality_hazard", "identity", "phase", "item", "is_error"):
        assert f"| `{field}` |" in page
    # Where a file pointer may lead, and who runs a thread's handler.
    intro = " ".join(page.split("\n## ", 1)[0].split())
    assert "`E_FILE_NOT_ALLOWED: $.messages[0].attachments[0].path: ...`" in intro
    assert "unless the configuration's `tools.allow_thread_handlers` allows it" in intro
    assert "| `checksum` | string or null | `null` | SHA-256" in page
    media = _section(page, "Media")
    assert "Exactly one of `path`, `data_base64`, `file_id`, `url` is set." in media


def _struct_keys(struct: type[msgspec.Struct], prefix: str = "") -> list[str]:
    """Dotted keys of a Struct and the Structs inside it, read from msgspec directly; a record
    the thread file has too (an output schema, a hosted tool) is documented there, not below
    its configuration key."""
    shared = set(thread_schema()["$defs"])
    config = struct.__struct_config__
    keys = [f"{prefix}{config.tag_field}"] if config.tag is not None else []
    for field in msgspec.structs.fields(struct):
        key = f"{prefix}{field.encode_name}"
        keys.append(key)
        members = list(getattr(field.type, "__args__", (field.type,)))
        # A list of Structs (``tuple[ContextManagement, ...]``) documents its Struct's keys.
        members += [inner for m in members for inner in getattr(m, "__args__", ())]
        for member in members:
            if (
                isinstance(member, type)
                and issubclass(member, msgspec.Struct)
                and member.__name__ not in shared
            ):
                keys += _struct_keys(member, f"{key}.")
    return keys


def test_the_configuration_reference_has_every_key():
    keys = docs_pages.config_keys()
    assert sorted(keys) == sorted(_struct_keys(Settings))
    assert "client.retry.max_retries" in keys and "request.tool_choice.name" in keys
    page = docs_pages.config_reference()
    for key in keys:
        section, _, field = key.rpartition(".")
        if section:
            assert f"| `{field}` |" in _section(page, f"`{section}`"), key
        else:
            assert f"\n## `{key}`\n" in page, key
    render = _section(page, "`render`")
    assert "| `tool_result_inline_max_bytes` | integer ≥ 0 | `4096` |" in render
    assert "Buckets after `timeline` go in a trailing system item." in render
    # The load order, from the defaults to the environment.
    intro = " ".join(page.split("\n## ", 1)[0].split())
    steps = ["the packaged `config/default.yaml`", "`--profile NAME`", "`--config FILE`"]
    steps += ["`--set KEY=VALUE`", "`${ENV}` / `${ENV:default}` interpolation"]
    assert [intro.index(step) for step in steps] == sorted(intro.index(step) for step in steps)
    assert "`turnwire check-config --print` prints the merged, validated settings" in intro


@pytest.mark.parametrize("name", sorted(docs_pages.THREAD_EXAMPLES))
def test_each_thread_example_is_valid(name):
    schema = thread_schema()
    assert set(docs_pages.THREAD_EXAMPLES) == {"Thread", *schema["$defs"]}
    if name != "Thread":
        schema = {"$schema": schema["$schema"], "$ref": f"#/$defs/{name}", "$defs": schema["$defs"]}
    validator = Draft202012Validator(schema)
    document = yaml.safe_load(docs_pages.THREAD_EXAMPLES[name])
    assert [error.message for error in validator.iter_errors(document)] == []
    import turnwire.model.records
    import turnwire.wire

    struct = getattr(turnwire.model.records, name, None) or getattr(turnwire.wire, name)
    msgspec.convert(document, struct)


@pytest.mark.parametrize("section", sorted(docs_pages.CONFIG_EXAMPLES))
def test_each_configuration_example_is_valid(section, tmp_path):
    assert set(docs_pages.CONFIG_EXAMPLES) == set(config_schema()["properties"])
    text = docs_pages.CONFIG_EXAMPLES[section]
    validator = Draft202012Validator(config_schema())
    assert [error.message for error in validator.iter_errors(yaml.safe_load(text))] == []
    profile = tmp_path / "example.yaml"
    profile.write_text(text)
    load_settings([profile], env={})


def test_the_command_line_reference_has_every_command_and_option():
    page = docs_pages.cli_reference()
    commands = docs_pages.cli_commands()
    names = [name for name, _ in commands]
    assert {"turnwire render", "turnwire schema", "turnwire threads import"} <= set(names)
    for name, parser in commands:
        assert re.search(rf"^#+ `{name}`$", page, re.MULTILINE), name
        for option in parser._option_string_actions:
            if option not in ("-h", "--help"):
                assert f"`{option}" in page, (name, option)
    # The parser itself, not the page generator, says which commands exist.
    (subcommands,) = [
        action for action in _parser()._actions if isinstance(action, argparse._SubParsersAction)
    ]
    assert len(subcommands.choices) >= 7
    for choice in subcommands.choices:
        assert f"\n## `turnwire {choice}`\n" in page


def docstring_tree(doc: str) -> list[tuple[str, str | None, str]]:
    """``(class, parent, code)`` per line of the first fenced block of a docstring, the parent
    read from the line's depth in the tree (``├── `` / ``│   `` steps of four characters)."""
    block = doc.split("```", 2)[1]
    rows: list[tuple[str, str | None, str]] = []
    parents: list[str] = []
    for line in block.strip("\n").splitlines():
        match = re.match(r"^([│├└─ ]*)(\w+)\s+(E_\w+)\b", line)
        assert match, f"a tree line without a class and its code: {line!r}"
        depth = len(match.group(1)) // 4
        parents[depth:] = [match.group(2)]
        rows.append((match.group(2), parents[depth - 1] if depth else None, match.group(3)))
    return rows


def test_the_tree_reader_finds_the_parent_and_the_code():
    doc = (
        "Tree:\n\n```\nA           E_A\n├── B       E_B (note)\n│   └── C   E_C\n└── D       E_D\n"
    )
    doc += "```\n\nAfter."
    assert docstring_tree(doc) == [
        ("A", None, "E_A"),
        ("B", "A", "E_B"),
        ("C", "B", "E_C"),
        ("D", "A", "E_D"),
    ]
    with pytest.raises(AssertionError, match="without a class and its code"):
        docstring_tree("```\nA\n```")


def test_the_errors_docstring_tree_names_every_class_under_its_base_with_its_code():
    classes = docs_pages.error_classes()
    assert len(classes) >= 28
    expected = [
        (cls.__name__, None if cls is errors.TurnwireError else cls.__bases__[0].__name__, cls.code)
        for cls in classes
    ]
    assert sorted(docstring_tree(errors.__doc__ or "")) == sorted(expected)


def test_the_errors_page_has_every_error_with_its_code_status_and_meaning():
    page = docs_pages.errors_reference()
    for cls in docs_pages.error_classes():
        anchor, fatal = cls.__name__.lower(), "yes" if cls.fatal else "no"
        row = f"| `{cls.code}` | [`{cls.__name__}`](#{anchor}) | {cls.status} | {fatal} |"
        assert row in page
        section = _section(page, f"`{cls.__name__}` {{#{anchor}}}")
        summary = " ".join((inspect.getdoc(cls) or "").split("\n\n")[0].split())
        assert summary.split("``")[0] in " ".join(section.split()), cls
    # What the README's table said of these is on the page now.
    assert "`E_STORE`, status 422, fatal" in page
    assert "a row damaged outside turnwire (the message names\nthe thread and the column)" in page
    assert "`turnwire run` exits 1 for any failure" in page
    never = " ".join(_section(page, "`InvalidToolCallArgs` {#invalidtoolcallargs}").split())
    assert "Never raised: its message is the error result the model reads" in never
    # Every error class is public.
    assert {cls.__name__ for cls in docs_pages.error_classes()} <= set(errors.__all__)


# ---------------------------------------------------------------------- the README

README = (REPO / "README.md").read_text()


def _block(text: str, heading: str, language: str) -> str:
    """The first fenced ``language`` block after the heading ``## heading``."""
    section = text[text.index(f"\n## {heading}\n") :]
    return section.split(f"```{language}\n", 1)[1].split("```", 1)[0]


def test_the_readme_stays_short_and_opens_with_what_it_is():
    assert len(README.splitlines()) <= 200
    assert "\n## What it is\n" in README
    assert "store: false" in README and "encrypted_content" in README


def test_the_readme_python_example_runs(tmp_path):
    code = _block(README, "From Python", "python")
    assert 20 <= len(code.splitlines()) <= 40
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "False ['message']"
    assert "Known facts:" in lines and "- Prefers tea" in lines
    assert lines[-1] == "['message', 'function_call', 'function_call_output', 'message']"


def test_the_readme_command_line_example_runs(tmp_path):
    commands = [
        line.split("#", 1)[0].split()
        for line in _block(README, "From the command line", "sh").splitlines()
    ]
    assert len(commands) >= 4
    outputs = []
    for command in commands:
        assert command[:3] == ["uv", "run", "turnwire"], command
        done = turnwire_process(*command[3:], env={"XDG_DATA_HOME": str(tmp_path)})
        assert done.returncode == 0, (command, done.stderr)
        outputs.append(done.stdout)
    assert json.loads(outputs[0])["store"] is False
    assert json.loads(outputs[1])["temperature"] == 0.2
    thread_id = outputs[3].strip()
    assert thread_id.startswith("thr_") and thread_id in outputs[4]


def test_the_readme_links_every_page_of_the_site():
    """Each page of the site is in the README's table: a written page as a link to its file,
    a generated one (no file to link to) by its title."""
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]
    table = "\n".join(line for line in README.splitlines() if line.startswith("| "))
    linked = re.findall(r"^\| \[[^]]+\]\(docs/([\w-]+\.md)\) \|", table, re.M)
    named = re.findall(r"^\| ([\w ]+) \(generated\) \|", table, re.M)
    assert all((REPO / "docs" / page).is_file() for page in linked)
    generated = {}
    for entry in nav:
        ((page,),) = [entry.values()]
        if page in docs_pages.PAGES:
            generated[page] = docs_pages.PAGES[page]().split("\n", 1)[0].removeprefix("# ")
        else:
            assert page in linked, page
    assert sorted(named) == sorted(generated.values())
    assert len(generated) == len([page for page in docs_pages.PAGES if page.endswith(".md")])


def test_the_rendering_page_names_every_preflight_rule():
    from turnwire.rendering.preflight import PREFLIGHT_RULES

    page = (REPO / "docs" / "rendering.md").read_text()
    table = _section(page, "The preflight check")
    assert re.findall(r"^\| `([a-z-]+)` \|", table, re.M) == list(PREFLIGHT_RULES)


def test_source_docstrings_point_only_to_files_in_the_repository():
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    names = {Path(path).name for path in tracked}
    pointers = {
        (path.name, found)
        for path in (REPO / "src").rglob("*.py")
        for found in re.findall(r"\b[\w-]+\.md\b", path.read_text())
    }
    assert pointers
    assert [pointer for pointer in pointers if pointer[1] not in names] == []


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return out


def test_the_site_builds_strictly_with_every_hook_and_the_schemas(site):
    hooks = (site / "hooks" / "index.html").read_text()

    def words(markup: str) -> str:
        return " ".join(re.sub(r"[^\w¶]+", " ", markup).split())

    text = words(html.unescape(re.sub(r"<[^>]+>", " ", hooks)))
    for name in docs_pages.hook_names():
        assert f'id="{name}"' in hooks, name
        # mkdocstrings rendered the hook's docstring: its summary and its parameters.
        function = getattr(hookspecs, name)
        summary = words((inspect.getdoc(function) or "").split("\n", 1)[0])
        start = text.index(f"{name} ¶")
        section = text[start : start + 4000]
        assert summary in section, name
        for parameter in inspect.signature(function).parameters:
            assert parameter in section, (name, parameter)
    with_parameters = [
        name
        for name in docs_pages.hook_names()
        if inspect.signature(getattr(hookspecs, name)).parameters
    ]
    assert text.count("Parameters Name Type Description") == len(with_parameters)
    assert json.loads((site / "schema" / "thread.json").read_text()) == thread_schema()
    assert json.loads((site / "schema" / "config.json").read_text()) == config_schema()
    for page in ("thread-file", "configuration", "cli", "api", "errors"):
        assert (site / page / "index.html").is_file(), page
    # Sphinx roles in docstrings reach the reader as code, not as raw markup.
    api = (site / "api" / "index.html").read_text()
    assert "<code>Thread</code>" in api
    raw = [
        path.name
        for path in site.rglob("*.html")
        if re.search(r":(class|func|attr|mod|meth|data|exc):", path.read_text())
    ]
    assert raw == []


def test_every_deliberate_difference_names_a_test_that_exists():
    page = (REPO / "docs" / "design-differences.md").read_text()
    cited = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", page)
    assert len(cited) >= 20
    for path, name in cited:
        source = (REPO / path).read_text()
        assert not name or re.search(rf"^(async )?def {name}\(", source, re.M), (path, name)
    rows = [line for line in page.splitlines() if line.startswith("| ") and "---" not in line]
    assert all("`tests/" in row for row in rows if not row.startswith(("| # |", "| Reference |")))


def test_the_deliberate_differences_are_in_the_nav():
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]
    assert {"Deliberate differences": "design-differences.md"} in nav


def test_the_readme_opens_with_the_two_commands_and_ci_runs_the_second():
    lines = (REPO / "README.md").read_text().splitlines()
    assert lines[2] == "```sh" and lines[5] == "```"
    demo, tests = lines[3], lines[4]
    assert demo.endswith("uv run --no-dev turnwire demo") and tests.endswith("uv run pytest")
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert tests.rsplit("&& ", 1)[1] in ci
