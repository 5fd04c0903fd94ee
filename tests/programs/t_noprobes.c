/* t_noprobes: a program without rt probes (allocsites must refuse it). */
#include <stdio.h>
int main(void) { puts("no probes here"); return 0; }
