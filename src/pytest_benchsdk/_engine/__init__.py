"""The engine: run knobs and participant selection (``schedule``, ``flag_values``), bench files
and their plans (``benchfile``, ``plans``), the executor, the task context with its steps and
``TaskError`` (``context``, ``steps``, ``taskerror``) and what an iteration sends to the
controller (``payload``). Plain Python: no pytest, no store, no platform. Public homes:
:mod:`pytest_benchsdk.schedule`, :mod:`~pytest_benchsdk.executor`,
:mod:`~pytest_benchsdk.context`."""
