# Every target works on a fresh clone: .venv is created and the project installed on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# pytest-xdist workers for make test (a module's tests stay on one worker, with its fixtures)
TEST_WORKERS ?= 2
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: test citation test-fast docs demo figures bench datasets reference tunings lint format clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first, pinned, so that nothing later pulls a CUDA build
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) -m pip install --quiet -e ".[rl,dev,distributed,docs,suite,serve,jax]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

# Every test, the linter, the formatter's check, the strict docs build and CITATION.cff's validation: what CI runs.
test: $(STAMP) citation
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet
	$(PY) -m pytest -q --durations=15 -n $(TEST_WORKERS) --dist loadscope

# CITATION.cff against the Citation File Format's schema, by cffconvert in a venv of its own (it pins jsonschema < 4,
# which Ray's would not share).
CFF_VENV := .venv-cff
$(CFF_VENV)/bin/cffconvert:
	$(PYTHON) -m venv $(CFF_VENV)
	$(CFF_VENV)/bin/pip install --quiet "cffconvert==2.0.0"

citation: $(CFF_VENV)/bin/cffconvert
	$(CFF_VENV)/bin/cffconvert --validate -i CITATION.cff

# The quick lane, to run after every change (under two minutes with warm kernel caches): every package's core
# behaviour; tests marked slow (3 s or more warm: larger tables, Ray, the wheel, the browser, training runs, JAX
# compiles) wait for make test.
test-fast: $(STAMP)
	$(PY) -m ruff check .
	HYPOTHESIS_PROFILE=dev $(PY) -m pytest -q -m "not slow" -n $(TEST_WORKERS) --dist loadscope

# The documentation site (MkDocs, API reference from the docstrings) -> site/; --strict: a broken link fails.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

# The main job: 3x3 table (built once), brief TD training, the benchmark -> results/ (under 10 minutes).
demo: $(STAMP)
	$(PY) -m experiments.demo

# Figures of the solved 3x3 and 2x4 games (the PNGs the README shows) -> docs/.
figures: $(STAMP)
	$(PY) -m experiments.figures --board 3x3 --out docs
	$(PY) -m experiments.figures --board 2x4 --out docs

bench: $(STAMP)
	$(PY) -m experiments.bench.env
	$(PY) -m experiments.bench.solver
	$(PY) -m experiments.bench.tables

lint: $(STAMP)
	$(PY) -m ruff check . && $(PY) -m ruff format --check .

format: $(STAMP)
	$(PY) -m ruff format . && $(PY) -m ruff check --fix .

# The reference datasets of docs/datasets.md -> results/datasets/ (3x3 and the L3-256 endgame: optimal play and the
# suite's TD trainer, 10,000 games each; the ones already there are kept), then behaviour cloning on each from
# 100, 1,000 and 10,000 games, every clone scored exactly -> results/bc/.
DATASETS := results/datasets
datasets: $(STAMP)
	for task in 3x3 L3-256; do \
	  test -d $(DATASETS)/solved2048/$$task/optimal-v0 || $(PY) -m experiments.suite dataset --task $$task \
	    --policy optimal --episodes 10000 --out $(DATASETS) || exit 1; \
	  test -d $(DATASETS)/solved2048/$$task/td-v0 || $(PY) -m experiments.suite dataset --task $$task \
	    --trainer experiments.suite.trainers:td --episodes 10000 --out $(DATASETS) || exit 1; \
	done
	$(PY) -m experiments.suite bc --root $(DATASETS) --out results/bc --datasets \
	  solved2048/3x3/optimal-v0,solved2048/3x3/td-v0,solved2048/L3-256/optimal-v0,solved2048/L3-256/td-v0

# The reference runs of the suite's registry (docs/suite.md, "Reference results"), from a clean checkout: the
# tables (their cost recorded), the fixed agents (five evaluation seeds each: a Monte-Carlo cell is played five
# times, an exact one computed once), the learners with the files in experiments/suite/hyperparams (suite v2's tuned
# values; 5 seeds each) in the small regime, and JAX PPO, TD and TD + expectimax in the large one -> $(REF)/NAME;
# then `python -m experiments.suite registry --add $(REF)/NAME --name NAME` for each, and `registry` to regenerate.
# Each run resumes where it stopped.  Days of process time here (docs/suite.md gives the times).
REF ?= results/reference
SUITE_RUN := $(PY) -m experiments.suite run --quiet
TRAINERS := experiments.suite.trainers
TABLED_TASKS := 2x3,2x4,3x3,L3-128,442-128,t-128,3x3-512,L3-256,442-256,t-512
SMALL := td td_expectimax jax_ppo jax_ppo_unmasked maskable_ppo dqn
LARGE := td td_expectimax jax_ppo
reference:
	$(PY) -m experiments.suite tables --verify --record $(REF)/tables.json
	$(SUITE_RUN) --agent random --seeds 5 --out $(REF)/random
	$(SUITE_RUN) --agent greedy --seeds 5 --out $(REF)/greedy
	$(SUITE_RUN) --agent expectimax:2 --seeds 5 --out $(REF)/expectimax-2
	$(SUITE_RUN) --agent optimal --seeds 5 --tasks $(TABLED_TASKS) --out $(REF)/optimal
	for trainer in $(SMALL); do \
	  $(SUITE_RUN) --trainer $(TRAINERS):$$trainer --seeds 5 --out $(REF)/$$(echo $$trainer | tr _ -) || exit 1; \
	done
	for trainer in $(LARGE); do \
	  $(SUITE_RUN) --trainer $(TRAINERS):$$trainer --seeds 5 --regime large \
	    --out $(REF)/$$(echo $$trainer | tr _ -)-large || exit 1; \
	done

# The reference tunings of suite v2 (docs/suite.md, "Tuning"), whose chosen values the learners' files hold: each
# learning algorithm tuned per family, on 3x3 for the score games and L3-256 for the success tasks, 20 trials of
# 1 M steps, and the task's own file under the same protocol (--baseline) -> $(TUNE)/ALGORITHM/FAMILY.  Each
# resumes.
TUNE ?= results/tuning
SUITE_TUNE := $(PY) -m experiments.suite tune --quiet --baseline --family --trials 20 --steps 1000000
tunings: $(STAMP)
	for algorithm in maskable_ppo dqn td; do \
	  $(SUITE_TUNE) --trainer experiments.suite.trainers:$$algorithm --task 3x3 --out $(TUNE)/$$algorithm/score \
	    || exit 1; \
	  $(SUITE_TUNE) --trainer experiments.suite.trainers:$$algorithm --task L3-256 --out $(TUNE)/$$algorithm/success \
	    || exit 1; \
	done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis build site *.egg-info
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -print | xargs rm -rf
