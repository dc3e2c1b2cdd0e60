" An editing session on the first 2 500 lines of perldiag.pod in Ex mode: substitutions,
" deletions, a sort, joins, a macro over many lines, then the result written out.
set nocompatible undolevels=1000 nomore
silent 2501,$d
silent %s/\<perl\>/Perl/g
silent g/^=item/s/$/ [item]/
silent! g/^$/,/./-j
silent %s/\s\+$//e
silent 1,800sort
silent g/deprecated/m$
silent v/\S/d
silent %s/\(\w\+\) \(\w\+\)/\2 \1/g
let @q = "0i> \<Esc>j"
silent 900,1400normal! @q
silent %s/[[:upper:]]\{4,}/\L&/g
silent 100,500g/a/normal! ddp
write! /tmp/heapworks-edit.out
qall!
