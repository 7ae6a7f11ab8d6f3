"""The streaming client: SSE decoding, output slots, transport, dispatch and the tool loop."""
