"""``turnwire threads`` as processes."""

from __future__ import annotations


def test_threads_show_transcript(tmp_path):
    from ..conftest import REPO_EXAMPLES, turnwire_process

    db = tmp_path / "t.db"
    done = turnwire_process(
        "threads", "import", str(REPO_EXAMPLES / "weather.yaml"), "--store", str(db), "--id", "w"
    )
    assert done.returncode == 0, done.stderr
    shown = turnwire_process("threads", "show", "w", "--transcript", "--store", str(db))
    assert shown.returncode == 0, shown.stderr
    first = shown.stdout.splitlines()[0]
    assert first == "Alice: What's the weather in Paris? [attached photo.png]"
    assert '[tool get_weather({"city":"Paris"})] 21C' in shown.stdout
