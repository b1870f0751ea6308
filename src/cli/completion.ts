/**
 * `hilt completion bash`: a bash completion script generated from the command tree, so it
 * cannot fall behind the commands. It completes group and command names, options, and the
 * fixed choices of arguments (`node list free|all`, `user create … admin|regular`).
 */
import { Command, Option } from 'commander';

interface Node { words: string[]; children: [string, Command][] }

function describe(cmd: Command): Node {
  const children = cmd.commands.map((c) => [c.name(), c] as [string, Command]);
  const options = (cmd.options as Option[]).filter((o) => !o.hidden && o.long).map((o) => o.long!);
  const choices = (cmd.registeredArguments ?? []).flatMap((a) => a.argChoices ?? []);
  return { words: [...children.map(([n]) => n), ...choices, ...options, '--help'], children };
}

export function bashCompletion(program: Command): string {
  const entries: [string, string[]][] = [];
  const walk = (cmd: Command, prefix: string) => {
    const d = describe(cmd);
    entries.push([prefix, d.words]);
    for (const [name, child] of d.children) walk(child, `${prefix} ${name}`);
  };
  // Keys start with the program's name: bash refuses an empty key.
  walk(program, program.name());
  const table = entries.map(([k, w]) => `  [${JSON.stringify(k)}]=${JSON.stringify(w.join(' '))}`).join('\n');
  const name = program.name();
  return `# bash completion for ${name}: source it, or add \`source <(${name} completion bash)\` to ~/.bashrc
declare -gA _${name}_words=(
${table}
)
_${name}_complete() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="${name}" w i
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ "$w" == -* ]] && continue
    if [[ -n "\${_${name}_words["$path $w"]+set}" ]]; then path="$path $w"; fi
  done
  COMPREPLY=($(compgen -W "\${_${name}_words["$path"]}" -- "$cur"))
}
complete -F _${name}_complete ${name}
`;
}
