# The relay of site 2: one foot on the site's segment, where it invites every peer it finds,
# and one on the backbone, where it reaches the NATS cluster: n2 first, the others if n2 fails.
exec nearby relay --name r2 --connect-found --site site2 --stats-interval 10 --federate "nats://$NEARBY_LAB_ADDR_n2:4222,nats://$NEARBY_LAB_ADDR_n1:4222,nats://$NEARBY_LAB_ADDR_n3:4222"
