# The relay on host r, on both segments (a service: the lab stops it when a and c are done).
nearby relay --name r --connect-found
