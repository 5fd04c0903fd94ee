/* symtab.h - what the reader's files that use libdwfl share: symtab.c's
 * lookups, lines.c's offline module and its addresses on stdin. */
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

/* lines.c: FILE alone in a Dwfl of its own, as --lines and --symbols
 * read it (its link-time address + *bias is its address there); NULL
 * after one line on stderr. next_address: the next hexadecimal address
 * on stdin (lines that are not one skipped), 0 at the end. */
Dwfl *offline_module(const char *path, Dwfl_Module **mod, Dwarf_Addr *bias);
int next_address(u64 *addr);

#endif
