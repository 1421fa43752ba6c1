# Two commands do everything on a fresh machine:
#   make demo   set up, build the chapter, grade a small class through nbgrader, print grades and status
#   make test   set up, check the chapter (gate), and run the whole test suite
VENV    ?= .venv
PYTHON  ?= python3
STAMP   := $(VENV)/.installed
# JupyterHub's proxy for tests/hub, from the npm registry, kept inside the project.
# configurable-http-proxy 5.1 and later need node 20; Debian 12's own nodejs is 18.
CHP     := .hub/node_modules/.bin/configurable-http-proxy

.PHONY: setup demo test gate status build clean

$(STAMP): pyproject.toml
	@# the sandbox's seccomp allowlist is compiled by Debian's libseccomp (graders/sandbox/seccomp.py)
	@ls /usr/lib/*/libseccomp.so.2 /lib/*/libseccomp.so.2 >/dev/null 2>&1 || \
	    { $$( [ "$$(id -u)" -eq 0 ] || echo sudo ) apt-get install -y libseccomp2; }
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e ".[test]"
	touch $(STAMP)

$(CHP):
	@command -v npm >/dev/null 2>&1 || \
	    { $$( [ "$$(id -u)" -eq 0 ] || echo sudo ) apt-get install -y nodejs npm; }
	npm install --silent --no-audit --no-fund --prefix .hub \
	    "configurable-http-proxy@$$(node -p 'process.versions.node.split(".")[0] >= 20 ? "5" : "~5.0.1"')"

setup: $(STAMP) $(CHP)

demo: $(STAMP)
	$(VENV)/bin/chapter build --check
	$(VENV)/bin/chapter demo

# The suite runs on two workers (pytest-xdist; tests/conftest.py keeps each file, and the files
# that share a server or real accounts, on one worker).
test: $(STAMP) $(CHP)
	$(VENV)/bin/chapter gate
	$(VENV)/bin/pytest -n 2 --dist loadfile --no-loadscope-reorder

gate: $(STAMP)
	$(VENV)/bin/chapter gate --verbose

status: $(STAMP)
	$(VENV)/bin/chapter status

build: $(STAMP)
	$(VENV)/bin/chapter build

clean:
	rm -rf demo-course autograded submitted feedback exchange gradebook.db .chapter
