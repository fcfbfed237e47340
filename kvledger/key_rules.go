package kvledger

import (
	"fmt"
	"unicode"
)

// checkNewKeys refuses, before anything is written, a key or need that
// holds a control character: U+0000-U+001F, U+007F and U+0080-U+009F
// (unicode.IsControl). A key travels where such characters break it or
// what shows it: the task runtime hands it to a command as the
// environment variable NATSCOORD_TASK_KEY, which cannot hold NUL (every
// attempt failed, and the task failed for good); newlines and tabs split
// the lines and columns of logs and tables; ESC and CSI drive terminals.
// Printable text of any script, spaces and dots stay allowed.
//
// Admission (Admit, Submit, AdmitMany) and Restore check it. Validate
// does not, so records stored before the rule still read and can be
// finished or deleted.
func checkNewKeys(key IdempotencyKey, needs []IdempotencyKey) error {
	if err := checkKeyChars("key", key); err != nil {
		return err
	}
	for _, n := range needs {
		if err := checkKeyChars("need", n); err != nil {
			return fmt.Errorf("key %q: %w", string(key), err)
		}
	}
	return nil
}

func checkKeyChars(what string, k IdempotencyKey) error {
	for i, r := range string(k) {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: %s %q holds the control character %U at byte %d; keys must be printable text",
				ErrInvalidState, what, string(k), r, i)
		}
	}
	return nil
}
