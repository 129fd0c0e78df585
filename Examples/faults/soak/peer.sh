#!/bin/sh
# A soak peer: it invites the hub (again every 5 s, in case it lost it), and says something
# every half second until the soak ends — SOAK_SECONDS (60 by default) after its first start,
# remembered in its state directory so that a restarted peer ends on time too. Its output is
# the chat's JSON events. The faults file pauses, kills and restarts peers.
# Run: nearby lab --hosts hub,p1,...,p20 --scripts Examples/faults/soak -- sh $PWD/Examples/faults/soak/peer.sh
mkdir -p "$NEARBY_STATE_DIR"
end_file="$NEARBY_STATE_DIR/soak-end"
[ -s "$end_file" ] || echo $(( $(date +%s) + ${SOAK_SECONDS:-60} )) > "$end_file"
end=$(cat "$end_file")
{
  n=0
  while [ "$(date +%s)" -lt "$end" ]; do
    n=$((n + 1))
    [ $((n % 10)) -eq 1 ] && echo "/invite hub"
    echo "$NEARBY_NAME $n"
    sleep 0.5
  done
  echo /quit
} | nearby chat --json --accept all
