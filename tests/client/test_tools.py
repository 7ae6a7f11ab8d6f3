"""The tool loop's executor: the artifact tools read pointers only inside the roots."""

from __future__ import annotations

from turnwire.files.pointers import ContextAssembler

from ..conftest import at
from ..files.test_pointers import _artifact_thread, secret_outside


def test_the_artifact_tools_read_pointers_only_inside_the_roots(tmp_path):
    import asyncio

    from turnwire.client.tools import ToolExecutor
    from turnwire.model.records import ToolCall

    (tmp_path / "out.log").write_text("one\ntwo\nthree\n")
    secret = secret_outside(tmp_path)
    head = ToolCall(
        id="c9", tool="artifact_head", args={"callId": "call_log", "n": 2}, created_at=at(2)
    )
    executor = ToolExecutor(inline_max_bytes=4096)
    inside = ContextAssembler(roots=[tmp_path / "out.log"])
    done = asyncio.run(
        executor.execute(head, _artifact_thread(str(tmp_path / "out.log")), files=inside)
    )
    assert (done.result.text, done.is_error) == ("one\ntwo", False)
    refused = asyncio.run(executor.execute(head, _artifact_thread(str(secret)), files=inside))
    assert refused.is_error and "leaked" not in refused.result.text
    assert refused.result.text.startswith(
        "The artifact 'call_log' cannot be read: $.tool_calls[0].result.artifact.path: "
    )
