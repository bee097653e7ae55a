/**
 * A filter form's choice: `any` (the empty value, the filter left out) first unless `any` is false, then each of
 * `choices`, shown as `words` says.
 */
export function ChoiceField({
  name,
  label,
  choices,
  selected,
  any = true,
  words = (choice) => choice,
}: {
  name: string;
  label: string;
  choices: readonly string[];
  selected: string | undefined;
  any?: boolean;
  words?: (choice: string) => string;
}) {
  return (
    <div class="field">
      <label for={name}>{label}</label>
      <select id={name} name={name}>
        {any ? <option value="">any</option> : null}
        {choices.map((choice) => (
          <option value={choice} selected={selected === choice}>
            {words(choice)}
          </option>
        ))}
      </select>
    </div>
  );
}
