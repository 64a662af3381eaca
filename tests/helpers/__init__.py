"""Shared helpers of the test suite, one module per area (imported as ``helpers.<module>``;
``tests/`` is on ``sys.path`` through the ``pythonpath`` setting in ``pyproject.toml``):

* :mod:`helpers.sessions`: bench-file sources for ``pytester`` sessions and readers of what a
  session left (store, JSON);
* :mod:`helpers.platform_server`: the loopback platform, a real HTTP server speaking the
  platform's protocol, with fault injection;
* :mod:`helpers.platform`: small helpers for platform tests (retry settings, local runs);
* :mod:`helpers.e2e`: reporting sessions against the loopback platform (bench files, options,
  delivery checks);
* :mod:`helpers.browser`: a page in headless Chromium (DOM, console, requests);
* :mod:`helpers.cli`: the store CLI run in this process, read as a subprocess would be;
* :mod:`helpers.runs`: finished runs built from records made in the test, summarised as the
  session end does, and kept in a real store.

* :mod:`helpers.platform_fixtures`: the loopback platform's fixtures (registered by the root
  ``conftest.py``).
"""
