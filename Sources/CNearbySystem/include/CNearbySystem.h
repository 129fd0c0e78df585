#ifndef NEARBY_CNEARBYSYSTEM_H
#define NEARBY_CNEARBYSYSTEM_H
// Linux system calls and macros that Glibc's Swift overlay does not export.
#include <stdint.h>
int nearby_placeholder(void);
#endif
