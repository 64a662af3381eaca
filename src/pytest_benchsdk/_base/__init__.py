"""The leaves: JavaScript value semantics (``js``), numbers for people (``numbers``), the clock,
redaction, file checks, the one percentile rule (``percentiles``), the reporting modes, the
run environment (``runenv``: git, interpreter, machine), what running steps tell the platform
(``coordination``) and the helper that names a public home (``public``). Nothing here imports
the rest of the package, so every area (``platform/`` included) may use it."""
