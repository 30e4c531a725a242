# Prints the candidates zsh's completion system offers for a command line, one a line:
#   zsh -f zsh_complete.zsh DIR "homecluster status -o "
# DIR holds the completion function (_homecluster). A real interactive zsh runs on a pseudo-terminal
# (zpty); compadd is wrapped to print what it is given; a NUL line marks the start and end of completion.
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PS1=''; PROMPT=''; RPROMPT=''"
zpty -w z "fpath=($1 \$fpath); autoload -U compinit; compinit -u -d $1/zcompdump"
zpty -w z 'bindkey "^I" complete-word'
zpty -w z 'null-line () { echo -E - $'"'"'\0'"'"' }; compprefuncs=( null-line ); comppostfuncs=( null-line exit )'
zpty -w z 'compadd () { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi; typeset -a __hits; builtin compadd -A __hits "$@"; (( $#__hits )) && print -l -- "HIT:"${^__hits}; builtin compadd "$@" }'
zpty -w -n z "$2"$'\t'
integer tog=0
line=
while zpty -r z line; do
  [[ $line == *$'\0'* ]] && (( tog++ )) && continue
  if (( tog )); then [[ $line == HIT:* ]] && print -r -- "${${${line#HIT:}%$'\n'}%$'\r'}"; fi
  (( tog >= 2 )) && break
done
zpty -d z
