# k2bench entry points. A fresh machine needs only Java 17 + Maven, Python 3.11 and Go: the
# targets fetch Maven artifacts, build a Python virtualenv and the tests' Terraform themselves.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
LINT_VENV := .venv-lint
MVN := mvn -B -q -f system/pom.xml
JAR := system/launcher/target/k2bench.jar
JSA := system/launcher/target/k2bench.jsa
SOURCES := $(shell find system -name '*.java' -o -name '*.proto' -o -name 'pom.xml' -o -path '*/src/main/resources/*' -type f | grep -v /target/)
RUN_STAMP = $(shell date -u +%Y%m%dT%H%M%SZ)
REPORTS := target/test-reports
TF_SCHEMAS := target/terraform-schemas/schemas.json
TERRAFORM_VERSION := 1.8.5
TERRAFORM := target/tools/terraform-$(TERRAFORM_VERSION)
CLOUD_INIT := target/cloud-init/usr/lib/python3/dist-packages/cloudinit

.PHONY: help test test-java test-python deploy-test browser-deps tf-schemas tf-tools cloud-init-schema terraform-check terraform-test build venv venvs new-system local-run analyze compare serve figures reproduce notebook bench-emulation bench-throughput \
	ec2-up ec2-run ec2-down ec2-status emulab-up emulab-run emulab-extend emulab-down netem-reset clean

help:
	@echo "make local-run        run workloads/default.yaml on this machine (EXPERIMENT=<name> for another)"
	@echo "make test             build everything and run all tests (Java + Python)"
	@echo "make analyze          report with the paper's figures for runs/latest (RUN=<dir> or RUN=\"<dir> <dir>\")"
	@echo "make figures          paper Fig. 8a-f: the six experiments (~1 h), then one report of all six"
	@echo "make reproduce PAPER=k2|paris|karma|placement|all  a paper's experiments, then its scorecard (SCALE=quick|full, DIR=<dir> continues one)"
	@echo "make notebook         JupyterLab on the repository (analysis/notebooks)"
	@echo "make compare RUNS=\"<dir> <dir>\"  runs side by side: overlaid CDFs, changes per system (ARGS=\"--by deployment --pool\")"
	@echo "make serve            browse runs/ at http://127.0.0.1:8000/: runs, scorecards, two runs compared (RUNS=<dir>, ARGS=\"--port 0\")"
	@echo "make bench-emulation  measure the embedded WAN emulation: configured vs measured RTT"
	@echo "make bench-throughput each system's real peak, its CPU table and the Fig. 9 ratios (SETTINGS=default: one setting; QUICK=1: one setting in ~15 min; RESUME=runs/<dir> continues one)"
	@echo "make build            build system/launcher/target/k2bench.jar"
	@echo "make terraform-check  terraform/ec2 and emulab against the providers' real schemas, offline"
	@echo "make terraform-test   terraform init, validate and test (mocked providers) on both, offline"
	@echo "make new-system NAME=<name>  a new system's module under system/, registered in the poms (docs/adding-a-system.md)"
	@echo "make deploy-test      the remote path on 4 local test hosts: Ansible site.yml, smoke via Fabric, faults (root)"
	@echo "make ec2-up / ec2-run / ec2-down        six AWS regions (terraform/ec2; EXPERIMENT=<name>, SERVERS_PER_DC=4 for paper scale)"
	@echo "make ec2-status       what k2bench runs on EC2 in each region, found by tags (no Terraform state needed; ARGS=\"--experiment-id <id>\")"
	@echo "make emulab-up / emulab-run / emulab-down   an Emulab experiment with tc latency (terraform/emulab)"
	@echo "make emulab-extend HOURS=<n>                 n more hours for the running Emulab experiment"
	@echo "make netem-reset      remove k2bench's tc qdiscs from a cluster (INVENTORY=<inventory.json>, default Emulab's)"

# The virtualenvs first (set-up, not timed), then the jar, the Java tests and the Python
# tests (test-java, test-python below), one phase after another, the notebooks' tests at
# SCHED_IDLE beside the last: the Python tests beside the Java reactor at nice 19 took 70-90 s
# off, but the reactor's timing-bound classes failed in two of five such runs (docs/tests.md).
# The Python phases run once the Java ones pass, each whatever the one before it gave, so
# that one failing hides no other's result. Ends with the ten slowest tests (Java and Python)
# and the time it took, each phase's too, failed or not, with the machine's busy CPU seconds
# (/proc/stat): on this VM a phase's wall time moves by a tenth between days, its work less.
test: venvs browser-deps tf-schemas tf-tools cloud-init-schema
	@mkdir -p $(REPORTS); touch $(REPORTS)/.start; start=$$(date +%s); rc=0; took=""; \
	busy() { awk -v hz=$$(getconf CLK_TCK) '/^cpu /{printf "%d", ($$2+$$3+$$4+$$7+$$8)/hz}' /proc/stat; }; b0=$$(busy); \
	phase() { local s=$$(date +%s) b=$$(busy) r=0; eval "$$2" || r=$$?; \
	  took="$$took$${took:+, }$$1 $$(( $$(date +%s) - s )) s/$$(( $$(busy) - b )) CPU-s"; return $$r; }; \
	{ phase build '$(MAKE) --no-print-directory build' && phase java '$(JAVA_REACTOR)' \
	  && phase java-alone '$(JAVA_ALONE)'; } || rc=$$?; \
	[ $$rc -ne 0 ] || { phase unit '$(PY_UNIT)' || rc=$$?; phase cluster '$(PY_CLUSTER)' || rc=$$?; \
	  phase alone+idle '$(PY_ALONE_BESIDE_IDLE)' || rc=$$?; }; \
	$(VENV)/bin/python tests/slowest.py --since $(REPORTS)/.start $(REPORTS)/pytest-*.xml || true; \
	echo "make test: $$(( $$(date +%s) - start )) s, $$(( $$(busy) - b0 )) CPU-s ($$took)$$([ $$rc -eq 0 ] || echo ', FAILED')"; exit $$rc

venvs: $(VENV)/.installed $(LINT_VENV)/.installed

# Two modules at a time (two JVMs each: system/pom.xml), then the classes tagged alone (bounds
# on timing from above) one at a time after the whole reactor, with nothing else running.
# `test`, not `install`: $(JAR) installs; the alone classes after `test-compile`, so each
# module's tests take its siblings from this checkout's target/ directories, not from what
# another clone last installed in ~/.m2.
JAVA_REACTOR = mvn -B -ntp -T 2 -f system/pom.xml test -Dk2bench.skipAlone=true | grep -E "Tests run:|FAIL|ERROR|BUILD"
JAVA_ALONE = mvn -B -ntp -f system/pom.xml test-compile surefire:test@alone | grep -E "Tests run:|FAIL|ERROR|BUILD"
test-java: $(JAR)
	$(JAVA_REACTOR)
	$(JAVA_ALONE)

# Three phases: the tests that start no cluster, three at a time (file by file: a file's tests
# share its fixtures; on 2 cores three finished sooner than two);
# the cluster runs three at a time (what they assert holds on a loaded machine: a checker's
# verdict, counts, lower bounds; two at a time left a fifth of the two cores idle, runs wait
# on their trials' clocks; four took as long as three); then those marked alone one at a
# time, with nothing beside them but the idle tests below, as their bounds on timing and
# fault timings assume.
PY_UNIT = $(PY_TEST) -m pytest -q -n 3 --dist loadfile -m "not cluster and not idle" tests --ignore=tests/deploy \
	--junitxml=$(REPORTS)/pytest-unit.xml
PY_CLUSTER = $(PY_TEST) -m pytest -q -n 3 --dist load -m "cluster and not alone" tests --ignore=tests/deploy \
	--junitxml=$(REPORTS)/pytest-cluster.xml
PY_ALONE = $(PY_TEST) -m pytest -q -m "cluster and alone" tests --ignore=tests/deploy \
	--junitxml=$(REPORTS)/pytest-alone.xml
# The tests marked idle (CPU work, no bound on time under a minute: tests/conftest.py) run in one
# process at SCHED_IDLE beside the alone runs, which leave ~0.8 of the two cores idle: the
# kernel hands the idle class only time no other thread wants, and a waking thread of
# another class takes the CPU from it (nice 19 only lowers a thread's share; docs/tests.md).
# Their output goes to a log, its summary after the alone runs'; either failing fails the
# phase. A background job of a script ignores Ctrl-C: the trap stops it with the rest (TERM,
# which tests/conftest.py turns into a Ctrl-C, so that its fixtures stop what they started).
PY_IDLE = chrt --idle 0 $(PY_TEST) -m pytest -q -m "idle and not cluster" tests --ignore=tests/deploy \
	--junitxml=$(REPORTS)/pytest-idle.xml
PY_ALONE_BESIDE_IDLE = ( $(PY_IDLE) > $(REPORTS)/pytest-idle.log 2>&1 & idle=$$!; \
	trap "kill $$idle 2>/dev/null; wait $$idle" EXIT; trap "exit 130" INT TERM; r=0; $(PY_ALONE) || r=$$?; \
	wait $$idle || r=$$?; trap - EXIT; \
	echo "tests at SCHED_IDLE beside them ($(REPORTS)/pytest-idle.log):"; tail -n 1 $(REPORTS)/pytest-idle.log; \
	[ $$r -eq 0 ] || grep -E "^(FAILED|ERROR) " $(REPORTS)/pytest-idle.log || true; exit $$r )
test-python: $(JSA) $(VENV)/.installed $(LINT_VENV)/.installed $(TF_SCHEMAS) $(TERRAFORM) $(CLOUD_INIT)
	@mkdir -p $(REPORTS)
	$(PY_UNIT)
	$(PY_CLUSTER)
	@$(PY_ALONE_BESIDE_IDLE)

# The tests' Python with bytecode kept (__pycache__/, ignored by git): with
# PYTHONDONTWRITEBYTECODE set, as in some shells, every pytest process assertion-rewrote each
# test module again, a quarter of a collection's CPU, and make test collects in ten processes.
PY_TEST = env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/python

# The remote path for real on this machine: four test hosts (network namespaces with
# their own sshd, a non-root SSH user with sudo, strict host keys, one slow to answer),
# ansible/site.yml applied to them, the smoke experiment through the Fabric backend into
# runs/, a host cut off mid-run and a late start. Needs root; installs openssh-server and
# sudo if they are missing.
deploy-test: $(JAR) $(VENV)/.installed
	@test -x /usr/sbin/sshd || apt-get install -y -q --no-install-recommends openssh-server
	@command -v sudo > /dev/null || apt-get install -y -q --no-install-recommends sudo
	$(VENV)/bin/python -m pytest -q tests/deploy

# Headless Chromium for `k2bench serve --screenshot` and tests/test_serve.py's browser
# test: Debian's chromium and its driver, installed if missing (root, as deploy-test).
browser-deps:
	@command -v chromium > /dev/null && command -v chromedriver > /dev/null || \
	  apt-get install -y -q --no-install-recommends chromium chromium-driver || \
	  { apt-get update -q && apt-get install -y -q --no-install-recommends chromium chromium-driver; }

# The AWS, local and TLS providers' schemas (terraform/provider_schemas.py), from wheels pinned
# by hash: terraform/schema_check.py checks terraform/ec2 and terraform/emulab against them.
tf-schemas: $(TF_SCHEMAS)
$(TF_SCHEMAS): terraform/provider-schemas.txt terraform/provider_schemas.py | $(VENV)/.installed
	@rm -rf $(@D)/wheels; mkdir -p $(@D)/wheels
	$(VENV)/bin/pip download -q --no-deps --only-binary :all: --require-hashes -r terraform/provider-schemas.txt \
	  -d $(@D)/wheels
	$(VENV)/bin/python terraform/provider_schemas.py $(@D)/wheels/*.whl -o $@

# Every resource, argument, block and attribute reference of the Terraform configurations
# against those schemas, offline (terraform/schema_check.py): file:line for each finding.
terraform-check: $(TF_SCHEMAS)
	$(VENV)/bin/python terraform/schema_check.py terraform/ec2 terraform/emulab

# Terraform for the tests, built from its source at a pinned release with Go's toolchain (no
# release binary can be downloaded here): 1.8.5 is the newest whose module `go install`
# accepts (later ones carry replace directives), and has mock providers (1.7). Licence:
# BUSL-1.1. Minutes the first time, seconds from Go's build cache after. The cloud targets
# (ec2-up, emulab-up) use the terraform on your PATH, which must download real providers.
tf-tools: $(TERRAFORM)
$(TERRAFORM):
	@echo "building Terraform $(TERRAFORM_VERSION) from source with go install (minutes the first time)"
	@rm -rf $@.build; mkdir -p $@.build
	GOBIN=$(abspath $@.build) GOFLAGS=-buildvcs=false go install github.com/hashicorp/terraform@v$(TERRAFORM_VERSION)
	mv $@.build/terraform $@; rm -rf $@.build

# Debian's cloud-init, whose schema check the tests run on the user data Terraform renders:
# the package unpacked into target/, not installed (installed, it would act at this
# machine's next boot), and the Python libraries it imports from apt (root, as browser-deps).
CLOUD_INIT_LIBS := python3-configobj python3-jinja2 python3-jsonpatch python3-jsonschema python3-netifaces \
	python3-oauthlib python3-requests python3-serial python3-yaml
cloud-init-schema: $(CLOUD_INIT)
$(CLOUD_INIT):
	@dpkg -s $(CLOUD_INIT_LIBS) > /dev/null 2>&1 || apt-get install -y -q --no-install-recommends $(CLOUD_INIT_LIBS) || \
	  { apt-get update -q && apt-get install -y -q --no-install-recommends $(CLOUD_INIT_LIBS); } || \
	  { echo "cloud-init-schema: cannot install $(CLOUD_INIT_LIBS) (root and Debian's archive needed)"; exit 1; }
	@rm -rf target/cloud-init target/cloud-init.tmp; mkdir -p target/cloud-init.tmp/deb; chmod 777 target/cloud-init.tmp/deb
	cd target/cloud-init.tmp/deb && { apt-get download -qq cloud-init || { apt-get update -q && apt-get download -qq cloud-init; }; }
	dpkg-deb -x target/cloud-init.tmp/deb/cloud-init_*.deb target/cloud-init.tmp/root
	mv target/cloud-init.tmp/root target/cloud-init; rm -rf target/cloud-init.tmp

# init, validate and terraform test (terraform/ec2/tests) on copies of both configurations,
# offline: stand-in plugins serve the providers' real schemas (terraform/standin_provider.py),
# the tests mock the providers. A copy, so that no lock file of the stand-ins lands beside a
# real deployment's. GOGC: tests/test_terraform.py says why.
TF_OFFLINE := target/terraform-offline
terraform-test: $(TERRAFORM) $(TF_SCHEMAS)
	@rm -rf $(TF_OFFLINE); mkdir -p $(TF_OFFLINE)
	$(VENV)/bin/python terraform/standin_provider.py install --schemas $(TF_SCHEMAS) --mirror $(TF_OFFLINE)/mirror > /dev/null
	@for d in ec2 emulab; do \
	  cp -r terraform/$$d $(TF_OFFLINE)/$$d && (cd $(TF_OFFLINE)/$$d && \
	    rm -rf .terraform .terraform.lock.hcl *.tfstate* terraform.tfvars inventory.json known_hosts) && \
	  export TF_CLI_CONFIG_FILE=$(abspath $(TF_OFFLINE))/mirror/terraformrc GOGC=400 && \
	  $(TERRAFORM) -chdir=$(TF_OFFLINE)/$$d init -backend=false -input=false > /dev/null && \
	  $(TERRAFORM) -chdir=$(TF_OFFLINE)/$$d validate && \
	  { [ ! -d terraform/$$d/tests ] || $(TERRAFORM) -chdir=$(TF_OFFLINE)/$$d test; } || exit 1; \
	done

build: $(JAR) $(JSA)

# protoc runs only for a module whose own .proto files changed (checkStaleness, system/pom.xml):
# a changed .proto (another module's may import it) or pom (protoc's version) regenerates all.
$(JAR): $(SOURCES)
	@if tr ' ' '\n' <<< "$?" | grep -qE '\.proto$$|pom\.xml$$'; then rm -rf system/*/target/generated-sources/protobuf; fi
	$(MVN) install -DskipTests

# A class-data archive of the classes a JVM of the jar loads first (the transport: gRPC, Netty,
# protobuf), dumped by a short bench-emulation: the JVMs of local runs map it instead of loading
# and verifying those classes again, which took a fifth of a short trial's CPU
# (k2bench/trial/jvm.py). A JVM that cannot use it (another jar or JDK; ZGC) ignores it.
# The shortest bench that loads them (one ping per prober, few wake-up sleeps: 3 s, not 12,
# the same classes shared), written aside and renamed, so no JVM maps half an archive. A JDK
# that cannot dump one says so, and runs go without it.
$(JSA): $(JAR)
	@echo "class-data archive $@"; out=$$(mktemp -d); rm -f $@; \
	java -XX:ArchiveClassesAtExit=$(CURDIR)/$@.tmp -XX:TieredStopAtLevel=1 -jar $(CURDIR)/$(JAR) bench-emulation \
	  --samples 10 --probes-per-pair 10 --warmup-s 0 --wake-sleeps 20 --out $$out > $$out/log 2>&1 \
	  || { cat $$out/log; rm -rf $$out $@.tmp; exit 1; }; \
	if [ -f $@.tmp ]; then mv $@.tmp $@; else echo "no class-data archive written; JVMs start without it:"; \
	  grep -i -m 3 "cds\|archive\|share" $$out/log || true; fi; rm -rf $$out

venv: $(VENV)/.installed

# A new system's module from system/.template, registered in system/pom.xml and the
# launcher's (k2bench/scaffold.py). An empty NAME is refused at once; the scaffold checks the rest.
new-system:
	@test -n "$(NAME)" || { echo "make new-system: give the system's name, e.g. make new-system NAME=my-sys" >&2; exit 2; }
	@$(MAKE) --no-print-directory venv
	$(VENV)/bin/python -m k2bench.scaffold -- "$(NAME)"

$(LINT_VENV)/.installed: requirements-lint.txt
	$(PYTHON) -m venv $(LINT_VENV)
	nice -n 19 $(LINT_VENV)/bin/pip install -q -r requirements-lint.txt
	touch $@

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	nice -n 19 $(VENV)/bin/pip install -q -r requirements.txt
	nice -n 19 $(VENV)/bin/pip install -q --no-build-isolation --no-deps -e .
	touch $@

EXPERIMENT ?= default

local-run: $(JSA) $(VENV)/.installed
	$(VENV)/bin/k2bench run $(EXPERIMENT)

RUN ?= runs/latest

# The jar names the systems of runs made before their manifests did (labels, papers).
analyze: $(JSA) $(VENV)/.installed
	$(VENV)/bin/python -m analysis.report $(RUN)

# Paper Fig. 8a-f: the six experiments one after another (~10 min each), then one report
# drawing them together (runs/figures-<stamp>/index.html). A failed run stops the target.
FIG8 := fig8a-read-only fig8b-high-skew fig8c-f3 fig8d-write-5pct fig8e-moderate-skew fig8f-f1
figures: $(JSA) $(VENV)/.installed
	@dirs=""; for e in $(FIG8); do \
	  $(VENV)/bin/k2bench run $$e || exit 1; \
	  dirs="$$dirs $$(readlink -f runs/latest)"; \
	done; \
	$(VENV)/bin/python -m analysis.report $$dirs --out runs/figures-$(RUN_STAMP)

# A paper's experiments, then its scorecard: which of its claims hold here (analysis/reproduce.py,
# docs/reproducing.md). SCALE=quick takes about 30 min per paper on 2 cores; DIR continues one.
PAPER ?= k2
SCALE ?= quick
reproduce: $(JSA) $(VENV)/.installed
	$(VENV)/bin/k2bench reproduce $(PAPER) --scale $(SCALE) $(if $(DIR),--dir $(DIR))

# JupyterLab on the repository: open analysis/notebooks/*.ipynb, set `runs` in the first cell.
notebook: $(JAR) $(VENV)/.installed
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=$(CURDIR) $(if $(filter 0,$(shell id -u)),--allow-root) analysis/notebooks

# Runs side by side (the first is the baseline): make compare RUNS="runs/<a> runs/<b>" [ARGS=--pool]
compare: $(VENV)/.installed
	@test -n "$(RUNS)" || { echo 'make compare: give the runs, e.g. RUNS="runs/<a> runs/<b>"' >&2; exit 2; }
	$(VENV)/bin/k2bench compare $(RUNS) $(ARGS)

# The results browser on a runs directory (default runs/): make serve [RUNS=<dir>] [ARGS="--port 0"]
serve: $(VENV)/.installed $(if $(findstring --screenshot,$(ARGS)),browser-deps)
	$(VENV)/bin/k2bench serve $(or $(RUNS),runs) $(ARGS)

# ZGC: G1's ~10 ms young pauses on two cores would be measured as emulation error; the
# bench measures the transport, not the collector.
bench-emulation: $(JAR)
	dir=runs/$(RUN_STAMP)_bench-emulation; \
	java -XX:+UseZGC -jar $(JAR) bench-emulation --out $$dir; \
	ln -sfn $$(basename $$dir) runs/latest

# SETTINGS="default" (or a comma list) climbs fewer Fig. 9 settings than all six (~1 h each);
# RESUME=runs/<stamp>_bench-throughput continues an interrupted bench. QUICK=1 climbs one
# setting (SETTINGS, default "default") on workloads/bench-throughput-quick.yaml's coarser ladder.
# The Fig. 9 ratio table (analysis/throughput.py) is printed after the climbs, of the run
# directory this bench wrote (or resumed), unless the bench refused its input (exit 2).
bench-throughput: $(JSA) $(VENV)/.installed
	@rc=0; mark=$$(mktemp); \
	$(VENV)/bin/k2bench bench-throughput $(if $(SETTINGS),--settings "$(SETTINGS)") $(if $(QUICK),--quick) $(if $(RESUME),--resume "$(RESUME)") || rc=$$?; \
	run="$(RESUME)"; [ -n "$$run" ] || run=$$(find runs -maxdepth 1 -name '*_bench-throughput*' -newer "$$mark" 2>/dev/null | sort | tail -n 1 || true); \
	rm -f "$$mark"; \
	if [ $$rc -ne 2 ] && [ -n "$$run" ] && [ -f "$$run/throughput.json" ]; then $(VENV)/bin/python -m analysis.throughput "$$run"; fi; \
	exit $$rc

# ---------------------------------------------------------------- real clusters
# Each target first checks credentials and variables and stops with one line naming what
# is missing (terraform/check_env.py). Inventories: terraform/<provider>/inventory.json.
TF_EC2 := terraform -chdir=terraform/ec2
TF_EMULAB := terraform -chdir=terraform/emulab
EXPERIMENT_REMOTE = $(if $(filter command line environment,$(origin EXPERIMENT)),$(EXPERIMENT),default)

# Servers per datacenter of the cluster: empty keeps Terraform's default (2, as every
# shipped experiment); SERVERS_PER_DC=4 is the paper's scale, for *-up and *-run alike.
SERVERS_PER_DC ?=
SERVERS_FLAG = $(if $(strip $(SERVERS_PER_DC)),--servers-per-dc $(strip $(SERVERS_PER_DC)))
ifneq ($(strip $(SERVERS_PER_DC)),)
ec2-up ec2-down emulab-up: export TF_VAR_servers_per_dc := $(strip $(SERVERS_PER_DC))
endif

# Plan checks the quotas before anything is created; after apply, the price per hour and
# the deadline at which every instance terminates itself.
ec2-up:
	@$(PYTHON) terraform/check_env.py ec2
	$(TF_EC2) init -input=false
	$(TF_EC2) apply -input=false
	@echo
	@$(TF_EC2) output -raw summary
	@echo

ec2-run:
	@$(PYTHON) terraform/check_env.py ec2 --inventory
	@$(MAKE) --no-print-directory build venv
	$(VENV)/bin/k2bench deploy --inventory terraform/ec2/inventory.json --experiment $(EXPERIMENT_REMOTE) $(SERVERS_FLAG)
	$(VENV)/bin/k2bench run $(EXPERIMENT_REMOTE) --inventory terraform/ec2/inventory.json $(SERVERS_FLAG)

ec2-down:
	@$(PYTHON) terraform/check_env.py ec2
	$(TF_EC2) destroy -input=false

ec2-status: $(VENV)/.installed
	@$(VENV)/bin/python terraform/ec2_status.py $(ARGS)

emulab-up:
	@$(PYTHON) terraform/check_env.py emulab
	$(TF_EMULAB) init -input=false
	$(TF_EMULAB) apply -input=false

emulab-run:
	@$(PYTHON) terraform/check_env.py emulab --inventory
	@$(MAKE) --no-print-directory build venv
	$(VENV)/bin/k2bench deploy --inventory terraform/emulab/inventory.json --experiment $(EXPERIMENT_REMOTE) $(SERVERS_FLAG)
	$(VENV)/bin/k2bench run $(EXPERIMENT_REMOTE) --inventory terraform/emulab/inventory.json $(SERVERS_FLAG)

# HOURS more for the running experiment (portal.extendExperiment), with the arguments
# Terraform's state holds (output portal).
emulab-extend:
	@case "$(HOURS)" in ''|*[!0-9]*|0*) echo "HOURS: give the hours to add as a whole number, e.g. make emulab-extend HOURS=8" >&2; exit 2;; esac
	@argv=$$($(TF_EMULAB) output -json portal 2>/dev/null) && [ "$${argv:0:1}" = "[" ] || \
	  { echo "emulab-extend: Terraform's state has no experiment: make emulab-up first" >&2; exit 2; }; \
	  $(PYTHON) -c 'import json, subprocess, sys; sys.exit(subprocess.call(json.loads(sys.argv[1]) + ["--hours", sys.argv[2], "extend"]))' "$$argv" "$(HOURS)"

emulab-down:
	@$(PYTHON) terraform/check_env.py emulab
	$(TF_EMULAB) destroy -input=false

# Removes the tc latency that `k2bench deploy` applied (latency netem) from every machine
# of an inventory; machines without it are left as they are.
INVENTORY ?= terraform/emulab/inventory.json

netem-reset: $(VENV)/.installed
	$(VENV)/bin/k2bench netem-reset --inventory $(INVENTORY)

clean:
	$(MVN) clean
	rm -rf $(VENV) $(LINT_VENV) target
