"""What the tests share: the processes they start (servers, upstreams, rigs), the recorded
and generated streams, each protocol's grammar checker, the golden cases and the pinned
client CLIs. Test modules import it as ``from support import servers`` (tests/ is on the
path, see pyproject.toml)."""
