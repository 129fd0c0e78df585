# The relay of site 2: one foot on the site's segment, where it invites every peer it finds,
# and one on the backbone, where it reaches the NATS cluster: n2 first, the others if n2 fails.
# The lab starts hosts one after another without waiting: wait (up to 10 s) until n2 answers, so
# that the relay starts on the node it lists first (the lab test kills n1; r1 must fail over).
bash -c 'for _ in $(seq 100); do (exec 3<>/dev/tcp/$NEARBY_LAB_ADDR_n2/4222) 2>/dev/null && exit 0; sleep 0.1; done'
exec nearby relay --name r2 --connect-found --site site2 --stats-interval 10 --federate "nats://$NEARBY_LAB_ADDR_n2:4222,nats://$NEARBY_LAB_ADDR_n1:4222,nats://$NEARBY_LAB_ADDR_n3:4222"
