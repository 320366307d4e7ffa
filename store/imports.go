package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/blindexec/blindexec/internal/redact"
)

// CreateImportSource inserts src and sets its ID and times.
func (s *Store) CreateImportSource(ctx context.Context, src *ImportSource) error {
	src.stampCreate()
	src.ImportedTime = dbTimePtr(src.ImportedTime)
	if err := s.db.WithContext(ctx).Create(src).Error; err != nil {
		return fmt.Errorf("create import source %s %q: %w", src.Kind, src.Location, classify(err))
	}
	return nil
}

// UpdateImportSource overwrites every column of source src.ID except the
// creation audit and the aliases (an administrator's, kept across
// syncs), and sets src.UpdateTime.
func (s *Store) UpdateImportSource(ctx context.Context, src *ImportSource) error {
	src.UpdateTime = now()
	src.ImportedTime = dbTimePtr(src.ImportedTime)
	res := s.db.WithContext(ctx).Model(&ImportSource{}).Where("source_id = ?", src.ID).
		Select("kind", "location", "sha256", "prefix", "options", "imported_time", "operation_count",
			"imported_count", "failed_count", "title", "tag_descriptions", "update_by", "update_time", "remark").
		Updates(src)
	if err := affected(res); err != nil {
		return fmt.Errorf("update import source %d: %w", src.ID, err)
	}
	return nil
}

// FindImportSource returns the latest source of kind at location, or
// ErrNotFound.
func (s *Store) FindImportSource(ctx context.Context, kind, location string) (*ImportSource, error) {
	var src ImportSource
	err := s.db.WithContext(ctx).Where("kind = ? AND location = ?", kind, location).
		Order("source_id DESC").Take(&src).Error
	if err != nil {
		return nil, fmt.Errorf("find import source %s %q: %w", kind, location, classify(err))
	}
	return &src, nil
}

// SetImportSourceSealedURL keeps the sealed URL (whole: with its userinfo
// and query credentials) of
// source id.
func (s *Store) SetImportSourceSealedURL(ctx context.Context, id int64, sealed string) error {
	res := s.db.WithContext(ctx).Model(&ImportSource{}).Where("source_id = ?", id).
		Updates(map[string]any{"sealed_url": sealed})
	if err := affected(res); err != nil {
		return fmt.Errorf("set the sealed URL of import source %d: %w", id, err)
	}
	return nil
}

// SourceSummary is an import source with the number of plugins it wrote
// and, for an MCP server's, the server's name.
type SourceSummary struct {
	ImportSource
	Plugins    int    `gorm:"column:plugin_count" json:"plugins"`
	ServerName string `gorm:"column:server_name" json:"server_name,omitempty"`
}

// ListImportSources returns every import source with its plugins' count,
// ordered by kind and location.
func (s *Store) ListImportSources(ctx context.Context) ([]SourceSummary, error) {
	var out []SourceSummary
	err := s.db.WithContext(ctx).Model(&ImportSource{}).
		Select("sys_ai_import_source.*, " +
			"(SELECT COUNT(*) FROM sys_ai_plugin p WHERE p.source_id = sys_ai_import_source.source_id) AS plugin_count, " +
			"(SELECT m.name FROM sys_ai_mcp_server m WHERE sys_ai_import_source.kind = 'mcp' AND m.mcp_id = sys_ai_import_source.location) AS server_name").
		Order("kind, location, source_id").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list import sources: %w", classify(err))
	}
	for i := range out {
		// a row written before migration 00031 holds its URL whole until
		// its next sync rewrites it
		out[i].Location = redact.Location(out[i].Location)
	}
	return out, nil
}

// SetImportSourceAliases sets the names an administrator gives source id
// besides its own (issue 49): tool search finds its tools by them, and no
// sync changes them.
func (s *Store) SetImportSourceAliases(ctx context.Context, id int64, aliases []string) error {
	var v *string
	if len(aliases) > 0 {
		b, err := json.Marshal(aliases)
		if err != nil {
			return err
		}
		str := string(b)
		v = &str
	}
	res := s.db.WithContext(ctx).Model(&ImportSource{}).Where("source_id = ?", id).
		Updates(map[string]any{"aliases": v, "update_time": now()})
	if err := affected(res); err != nil {
		return fmt.Errorf("set aliases of import source %d: %w", id, err)
	}
	return nil
}

// SealedImportURL is an import source's id and the URL kept sealed for it.
type SealedImportURL struct {
	ID     int64  `gorm:"column:source_id"`
	Sealed string `gorm:"column:sealed_url"`
}

// SealedImportURLs returns every import source's sealed URL (`cred rotate`
// re-encrypts them): a handful of rows, read at once.
func (s *Store) SealedImportURLs(ctx context.Context) ([]SealedImportURL, error) {
	var out []SealedImportURL
	err := s.db.WithContext(ctx).Model(&ImportSource{}).Select("source_id, sealed_url").
		Where("sealed_url IS NOT NULL AND sealed_url <> ''").Order("source_id").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("read the sealed URLs of import sources: %w", classify(err))
	}
	return out, nil
}

// ReplaceImportSourceSealedURL replaces source id's sealed URL with sealed,
// but only if it still holds old: a sync sealing it anew meanwhile is never
// overwritten. ErrNotFound when the row is gone or its URL changed.
func (s *Store) ReplaceImportSourceSealedURL(ctx context.Context, id int64, old, sealed string) error {
	res := s.db.WithContext(ctx).Model(&ImportSource{}).Where("source_id = ? AND sealed_url = ?", id, old).
		Updates(map[string]any{"sealed_url": sealed})
	if err := affected(res); err != nil {
		return fmt.Errorf("replace the sealed URL of import source %d: %w", id, err)
	}
	return nil
}

// ImportSourcesToSeal returns the OpenAPI sources whose stored location
// may hold a secret (an @ after the scheme, a query, or a ; of a path
// parameter): rows an engine before migration 00031 (userinfo), 00034 (a
// query's credential) or 00035 (a path parameter's) wrote with the URL
// whole.
func (s *Store) ImportSourcesToSeal(ctx context.Context) ([]ImportSource, error) {
	var out []ImportSource
	err := s.db.WithContext(ctx).Select("source_id, kind, location").
		Where("kind = ? AND (location LIKE ? OR location LIKE ? OR location LIKE ?)", SourceOpenAPI, "%://%@%", "%://%?%", "%://%;%").Order("source_id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("read the import sources to seal: %w", classify(err))
	}
	return out, nil
}

// SealImportSourceLocation moves source id from the location old (with
// its userinfo) to shown, keeping sealed as its URL, in one statement and
// only if it is still at old: a sync meanwhile is never overwritten.
// ErrNotFound when the row is gone or moved.
func (s *Store) SealImportSourceLocation(ctx context.Context, id int64, old, shown, sealed string) error {
	res := s.db.WithContext(ctx).Model(&ImportSource{}).Where("source_id = ? AND location = ?", id, old).
		Updates(map[string]any{"location": shown, "sealed_url": sealed})
	if err := affected(res); err != nil {
		return fmt.Errorf("seal the location of import source %d: %w", id, err)
	}
	return nil
}
