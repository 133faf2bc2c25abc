"""The fuzzing tier: inputs generated or mutated at random against a running gateway.

``tests/integration/test_fuzz.py`` (documents from the schema), ``tests/integration/test_fuzz_variables.py``
(variables of every root field), ``tests/integration/test_fuzz_http.py`` (byte-level mutations of
valid HTTP requests) and ``tests/integration/test_fuzz_websocket.py`` (mutated protocol messages and
raw frames) share what is here: the budget of a run (:mod:`tests.support.fuzz.budget`), the
mutators (:mod:`tests.support.fuzz.mutate`) and the watch on the server's log
(:mod:`tests.support.fuzz.watch`).

Inside ``scripts/test`` each runs briefly, with a fixed seed, so a run is reproducible;
``scripts/fuzz [minutes]`` (or ``FUZZ_MINUTES``) runs them for longer with a fresh seed
each time, printed, and ``FUZZ_SEED`` replays one.
"""
