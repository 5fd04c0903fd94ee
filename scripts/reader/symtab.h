/* symtab.h - symtab.c's lookups, for the files that use libdwfl. */
#ifndef ALLOCSITES_SYMTAB_H
#define ALLOCSITES_SYMTAB_H

#include <elfutils/libdwfl.h>

/* dwfl_module_addrinfo's name and offset, from a sorted index of the
 * module's symbols kept in the module's userdata: symtab_removed is
 * dwfl_report_end's callback, symtab_forget_all goes before dwfl_end. */
const char *symtab_addrinfo(Dwfl_Module *mod, u64 pc, GElf_Off *off);
int symtab_removed(Dwfl_Module *mod, void *userdata, const char *name,
		   Dwarf_Addr base, void *arg);
void symtab_forget_all(Dwfl *dwfl);

#endif
