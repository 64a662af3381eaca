"""The benchmark config, one package: the models and ``define_*`` helpers (``models``), reading
raw input the way upstream's JavaScript does (``read``), upstream's validation rules and
messages (``validate``) and the threshold language (``thresholds``). Pure; public home:
:mod:`pytest_benchsdk.config`."""
