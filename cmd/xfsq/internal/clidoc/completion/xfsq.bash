# bash completion for xfsq: xfsq completion bash > /etc/bash_completion.d/xfsq
#
# It asks xfsq itself which words may follow (urfave/cli's
# --generate-bash-completion), so it matches the installed binary's
# commands and flags. It needs nothing but bash (no bash-completion
# package) and runs the words typed as arguments, never through eval.
_xfsq_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}"
  local words=("${COMP_WORDS[@]:0:COMP_CWORD}")
  local opts
  if [[ "$cur" == -* ]]; then
    opts=$("${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${words[@]}" --generate-bash-completion 2>/dev/null)
  fi
  local IFS=$'\n'
  COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
}
complete -o bashdefault -o default -F _xfsq_complete xfsq
