//go:build cgo

package gpu

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/NVIDIA/go-dcgm/pkg/dcgm"
)

// dcgmLibName is the soname go-dcgm dlopens.
const dcgmLibName = "libdcgm.so.4"

// dcgmForwarder is the thin layer over go-dcgm. go-dcgm keeps its
// connection in package state, so one process holds one DCGM connection.
type dcgmForwarder struct {
	address  string
	cleanup  func()
	group    dcgm.GroupHandle
	fields   dcgm.FieldHandle
	watching bool
}

// NewDCGM connects to DCGM (embedded when opts.Address is empty). go-dcgm
// dlopens libdcgm.so.4 at this point, not at program start, so a binary
// built here runs on machines without DCGM; there NewDCGM fails with an
// error wrapping ErrLibraryNotFound.
func NewDCGM(opts DCGMOptions) (*DCGM, error) {
	return newDCGMWithLib(&dcgmForwarder{address: opts.Address}, opts)
}

func (f *dcgmForwarder) Connect() error {
	var err error
	if f.address == "" {
		f.cleanup, err = dcgm.Init(dcgm.Embedded)
	} else {
		addr, unix := dcgmAddress(f.address)
		f.cleanup, err = dcgm.Init(dcgm.Standalone, addr, unix)
	}
	if err == nil {
		return nil
	}
	// go-dcgm says only "libdcgm.so.4 not found" when dlopen fails.
	if strings.Contains(err.Error(), dcgmLibName) {
		return fmt.Errorf("cannot load %s: %w (install NVIDIA DCGM 4, or choose --gpu.backend=nvml or dcgm-exporter)",
			dcgmLibName, ErrLibraryNotFound)
	}
	if f.address != "" {
		return fmt.Errorf("connect to nv-hostengine at %s: %w", f.address, err)
	}
	return fmt.Errorf("start embedded DCGM: %w", err)
}

// dcgmAddress splits an address into go-dcgm's (address, "1" for a unix
// socket or "0" for TCP) pair.
func dcgmAddress(a string) (string, string) {
	if p, ok := strings.CutPrefix(a, "unix://"); ok {
		return p, "1"
	}
	if strings.HasPrefix(a, "/") {
		return a, "1"
	}
	return strings.TrimPrefix(a, "tcp://"), "0"
}

func (f *dcgmForwarder) Disconnect() error {
	var errs []error
	if f.watching {
		errs = append(errs, dcgm.UnwatchFields(f.fields, f.group), dcgm.FieldGroupDestroy(f.fields), dcgm.DestroyGroup(f.group))
		f.watching = false
	}
	if f.cleanup != nil {
		f.cleanup()
		f.cleanup = nil
	}
	return errors.Join(errs...)
}

func (f *dcgmForwarder) GPUs() ([]uint, error) {
	ids, err := dcgm.GetSupportedDevices()
	if err != nil {
		return nil, fmt.Errorf("list GPUs: %w", err)
	}
	return ids, nil
}

func (f *dcgmForwarder) Watch(gpus []uint, fields []uint16, every time.Duration) error {
	name := fmt.Sprintf("goodput-exporter-%d", os.Getpid())
	group, err := dcgm.CreateGroup(name)
	if err != nil {
		return fmt.Errorf("create GPU group: %w", err)
	}
	for _, id := range gpus {
		if err := dcgm.AddToGroup(group, id); err != nil {
			return errors.Join(fmt.Errorf("add GPU %d to group: %w", id, err), dcgm.DestroyGroup(group))
		}
	}
	ids := make([]dcgm.Short, len(fields))
	for i, fid := range fields {
		ids[i] = dcgm.Short(fid)
	}
	fg, err := dcgm.FieldGroupCreate(name, ids)
	if err != nil {
		return errors.Join(fmt.Errorf("create field group: %w", err), dcgm.DestroyGroup(group))
	}
	// Keep two samples at most: the backend only reads the latest.
	if err := dcgm.WatchFieldsWithGroupEx(fg, group, every.Microseconds(), 0, 2); err != nil {
		return errors.Join(fmt.Errorf("watch fields: %w", err), dcgm.FieldGroupDestroy(fg), dcgm.DestroyGroup(group))
	}
	f.group, f.fields, f.watching = group, fg, true
	return nil
}

func (f *dcgmForwarder) Latest(gpu uint, fields []uint16) ([]dcgmReading, error) {
	ids := make([]dcgm.Short, len(fields))
	for i, fid := range fields {
		ids[i] = dcgm.Short(fid)
	}
	vals, err := dcgm.EntityGetLatestValues(dcgm.FE_GPU, gpu, ids)
	if err != nil {
		var de *dcgm.Error
		if errors.As(err, &de) {
			return nil, dcgmStatus("read fields", int(de.Code), err)
		}
		return nil, fmt.Errorf("read fields: %w", err)
	}
	out := make([]dcgmReading, len(vals))
	for i, v := range vals {
		out[i] = dcgmValue(v)
	}
	return out, nil
}

// dcgmValue converts one field value; blanks (DCGM's "no value" sentinels)
// become ErrNotSupported.
func dcgmValue(v dcgm.FieldValue_v1) dcgmReading {
	if v.Status != dcgm.DCGM_ST_OK {
		return dcgmReading{Err: dcgmStatus(fmt.Sprintf("field %d", v.FieldID), v.Status, nil)}
	}
	var r dcgmReading
	switch v.FieldType {
	case dcgm.DCGM_FT_INT64:
		r.Int = v.Int64()
		if dcgm.IsInt64Blank(r.Int) {
			r.Err = fmt.Errorf("field %d blank: %w", v.FieldID, ErrNotSupported)
		}
	case dcgm.DCGM_FT_DOUBLE:
		r.Float = v.Float64()
		if r.Float >= dcgm.DCGM_FT_FP64_BLANK {
			r.Err = fmt.Errorf("field %d blank: %w", v.FieldID, ErrNotSupported)
		}
	case dcgm.DCGM_FT_STRING:
		r.Str = v.String()
	default:
		r.Err = fmt.Errorf("field %d has type %q: %w", v.FieldID, rune(v.FieldType), ErrNotSupported)
	}
	return r
}

// dcgmStatus maps a dcgmReturn_t to the package's errors.
func dcgmStatus(what string, code int, err error) error {
	switch code {
	case dcgm.DCGM_ST_NOT_SUPPORTED, dcgm.DCGM_ST_NO_DATA:
		return fmt.Errorf("%s: %w", what, ErrNotSupported)
	case dcgm.DCGM_ST_GPU_IS_LOST:
		return fmt.Errorf("%s: %w", what, ErrGPULost)
	}
	if err != nil {
		return fmt.Errorf("%s: dcgm status %d: %w", what, code, err)
	}
	return fmt.Errorf("%s: dcgm status %d", what, code)
}
