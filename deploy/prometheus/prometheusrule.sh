#!/bin/sh
# Prints rules.yaml as a PrometheusRule, for the Prometheus Operator:
#
#   deploy/prometheus/prometheusrule.sh | kubectl -n gpuflow apply -f -
#
# Add the labels your Prometheus selects rules by (kube-prometheus-stack:
# release=<its release name>) with RULE_LABELS='release: prometheus'.
set -eu
here=$(dirname "$0")
cat <<HEADER
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: gpuflow
  labels:
    app.kubernetes.io/name: gpuflow
HEADER
[ -z "${RULE_LABELS:-}" ] || echo "    ${RULE_LABELS}"
echo "spec:"
grep -v '^#' "$here/rules.yaml" | sed 's/^/  /'
