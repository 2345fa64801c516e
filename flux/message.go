package flux

import (
	"io/fs"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/internal/fluxmsg"
	"github.com/imagebump/imagebump/internal/msgtemplate"
)

// MessageInput returns what fluxmsg.Render needs to write the commit
// message of target t, whose Commit.FluxMessage is set, for the changes in
// data. files is the repository after the edits (an os.Root's FS).
// File names in the template's data are relative to the target's one Git
// path, as Flux's are relative to update.path.
func MessageInput(t config.Target, data msgtemplate.Data, files fs.FS) fluxmsg.Input {
	in := fluxmsg.Input{Changes: data.Changes, Updated: data.Updated, Files: files}
	if t.Commit != nil && t.Commit.FluxMessage != nil {
		fm := t.Commit.FluxMessage
		in.Automation, in.APIVersion, in.Template = fm.Automation, fm.APIVersion, fm.Template
		if len(fm.Values) > 0 {
			in.Values = map[string]string{}
			for _, v := range fm.Values {
				in.Values[v.Name] = v.Value
			}
		}
	}
	if t.Git != nil && len(t.Git.Paths) == 1 {
		in.UpdatePath = t.Git.Paths[0]
	}
	return in
}
