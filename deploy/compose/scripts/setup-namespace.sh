#!/bin/sh
# Prepares the Temporal namespace for durawait: creates the namespace when it
# is missing, then durawait's search attributes. durawait checks them when a
# role starts and refuses to start without them (docs/temporal-ui.md); the
# lines below are exactly the ones it prints, for the namespace it uses.
# Safe to run again: the server skips an attribute that exists.
#
# The temporal CLI reads TEMPORAL_ADDRESS (and TEMPORAL_NAMESPACE) from the
# environment, so the lines need no --address.
set -eu

ns=${TEMPORAL_NAMESPACE:-default}
# durawait's retention_hours default, as its start-up check suggests.
retention=${NAMESPACE_RETENTION:-24h}

tries=0
until temporal operator cluster health >/dev/null 2>&1; do
  tries=$((tries + 1))
  if [ "$tries" -ge 60 ]; then
    echo "Temporal at $TEMPORAL_ADDRESS did not become healthy" >&2
    exit 1
  fi
  sleep 2
done

if ! temporal operator namespace describe --namespace "$ns" >/dev/null 2>&1; then
  temporal operator namespace create --namespace "$ns" --retention "$retention"
fi

# workflows.SearchAttributeNames, in its order.
temporal operator search-attribute create --namespace "$ns" --name DurawaitTool --type Keyword
temporal operator search-attribute create --namespace "$ns" --name DurawaitState --type Keyword
temporal operator search-attribute create --namespace "$ns" --name DurawaitProbeTool --type Keyword
temporal operator search-attribute create --namespace "$ns" --name DurawaitCaller --type Keyword
temporal operator search-attribute create --namespace "$ns" --name DurawaitClient --type Keyword
temporal operator search-attribute create --namespace "$ns" --name DurawaitSession --type Keyword
temporal operator search-attribute create --namespace "$ns" --name DurawaitAgentProvider --type Keyword
temporal operator search-attribute create --namespace "$ns" --name DurawaitAgentStatus --type Keyword
temporal operator search-attribute create --namespace "$ns" --name DurawaitHost --type Keyword
temporal operator search-attribute create --namespace "$ns" --name DurawaitTarget --type Keyword
echo "namespace $ns has durawait's search attributes"
