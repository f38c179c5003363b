package ops

import (
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ledger/doctor"
)

// DoctorInput is what `doctor` is asked to do.
type DoctorInput struct {
	Repair bool // repair what can be repaired, then check again
}

// DoctorResult is the --json output contract of `doctor`.
type DoctorResult struct {
	Healthy bool                 `json:"healthy"`
	Store   string               `json:"store"`
	Before  *doctor.Report       `json:"before_repair,omitempty"` // with Repair: the first check
	Repair  *doctor.RepairResult `json:"repair,omitempty"`
	Report  *doctor.Report       `json:"report"` // the final check
}

// Doctor checks the store, and with in.Repair repairs it and checks again.
// An invalid config.json is a finding, not a reason to stop.
func Doctor(env Env, in DoctorInput) (*DoctorResult, error) {
	loc, err := env.Locate()
	if err != nil {
		return nil, err
	}
	if loc.StoreDir == "" {
		_, err := loc.Open()
		return nil, err
	}
	s, configErr, err := ledger.OpenStoreForDoctor(loc.StoreDir, loc.TSVPath)
	if err != nil {
		return nil, err
	}
	out := &DoctorResult{Store: s.Dir}
	rep, err := doctor.Diagnose(s, loc.Repo, configErr)
	if err != nil {
		return nil, err
	}
	if in.Repair {
		out.Before = rep
		if out.Repair, err = doctor.Repair(s, env.Now(), loc.Repo); err != nil {
			return nil, err
		}
		if rep, err = doctor.Diagnose(s, loc.Repo, configErr); err != nil {
			return nil, err
		}
	}
	out.Report = rep
	out.Healthy = rep.Healthy()
	return out, nil
}
