# k2bench entry points. A fresh machine needs only Java 17 + Maven and Python 3.11: the
# targets fetch Maven artifacts and build a Python virtualenv themselves.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
MVN := mvn -B -q -f system/pom.xml
JAR := system/launcher/target/k2bench.jar
SOURCES := $(shell find system -name '*.java' -o -name '*.proto' -o -name 'pom.xml' -o -path '*/META-INF/services/*' | grep -v /target/)
RUN_STAMP = $(shell date -u +%Y%m%dT%H%M%SZ)

.PHONY: help test test-java test-python build venv local-run analyze bench-emulation bench-throughput clean

help:
	@echo "make local-run        run workloads/default.yaml on this machine (EXPERIMENT=<name> for another)"
	@echo "make test             build everything and run all tests (Java + Python)"
	@echo "make analyze          report with the paper's figures for runs/latest (RUN=<dir> or RUN=\"<dir> <dir>\")"
	@echo "make bench-emulation  measure the embedded WAN emulation: configured vs measured RTT"
	@echo "make bench-throughput peak throughput per core of every system vs an echo RPC ceiling"
	@echo "make build            build system/launcher/target/k2bench.jar"

test: test-java test-python

test-java:
	mvn -B -ntp -f system/pom.xml install | grep -E "Tests run:|FAIL|ERROR|BUILD"

test-python: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q tests

build: $(JAR)

$(JAR): $(SOURCES)
	$(MVN) install -DskipTests

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -r requirements.txt
	$(VENV)/bin/pip install -q --no-build-isolation --no-deps -e .
	touch $@

EXPERIMENT ?= default

local-run: $(JAR) $(VENV)/.installed
	$(VENV)/bin/k2bench run $(EXPERIMENT)

RUN ?= runs/latest

analyze: $(VENV)/.installed
	$(VENV)/bin/python -m analysis.report $(RUN)

bench-emulation: $(JAR)
	dir=runs/$(RUN_STAMP)_bench-emulation; \
	java -jar $(JAR) bench-emulation --out $$dir; \
	ln -sfn $$(basename $$dir) runs/latest

bench-throughput: $(JAR) $(VENV)/.installed
	$(VENV)/bin/k2bench bench-throughput

clean:
	$(MVN) clean
	rm -rf $(VENV)
