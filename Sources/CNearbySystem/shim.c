#include "CNearbySystem.h"
int nearby_placeholder(void) { return 0; }
