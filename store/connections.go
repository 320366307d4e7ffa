package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// OAuthProvider is a row of sys_ai_oauth_provider: an authorization server
// users connect their accounts at (issue 34). ClientSecret is the
// encrypted string written by package auth's Keyring, never a plaintext.
type OAuthProvider struct {
	ID               int64  `gorm:"column:provider_id;primaryKey;autoIncrement"`
	Name             string `gorm:"column:provider_name"`
	AuthorizationURL string `gorm:"column:authorization_url"`
	TokenURL         string `gorm:"column:token_url"`
	RevocationURL    string `gorm:"column:revocation_url"`
	Issuer           string `gorm:"column:issuer"`
	Scopes           JSON   `gorm:"column:scopes"`
	ClientID         string `gorm:"column:client_id"`
	ClientSecret     string `gorm:"column:client_secret"`
	KeyID            string `gorm:"column:key_id"`
	PKCE             string `gorm:"column:pkce"`          // "1" or "0"
	IssSupported     string `gorm:"column:iss_supported"` // "1": every authorization response carries iss (RFC 9207)
	ExtraParams      JSON   `gorm:"column:extra_params"`
	Status           string `gorm:"column:status"` // StatusEnabled or StatusDisabled
	Audit
}

// TableName maps OAuthProvider onto its table.
func (OAuthProvider) TableName() string { return "sys_ai_oauth_provider" }

// PutOAuthProvider inserts p, or replaces the provider of its name (its
// id and creation kept); an empty ClientSecret keeps the stored one.
func (s *Store) PutOAuthProvider(ctx context.Context, p *OAuthProvider) error {
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		var old OAuthProvider
		err := tx.Where("provider_name = ?", p.Name).Take(&old).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			p.stampCreate()
			return tx.Create(p).Error
		case err != nil:
			return err
		}
		p.ID, p.CreateBy, p.CreateTime, p.UpdateTime = old.ID, old.CreateBy, old.CreateTime, now()
		if p.ClientSecret == "" {
			p.ClientSecret, p.KeyID = old.ClientSecret, old.KeyID
		}
		return tx.Save(p).Error
	})
	if err != nil {
		return fmt.Errorf("put oauth provider %q: %w", p.Name, classify(err))
	}
	return nil
}

// CreateOAuthProvider inserts p; a name already taken yields
// ErrDuplicate.
func (s *Store) CreateOAuthProvider(ctx context.Context, p *OAuthProvider) error {
	p.stampCreate()
	if err := s.db.WithContext(ctx).Create(p).Error; err != nil {
		return fmt.Errorf("create oauth provider %q: %w", p.Name, classify(err))
	}
	return nil
}

// GetOAuthProvider returns the provider called name, or ErrNotFound.
func (s *Store) GetOAuthProvider(ctx context.Context, name string) (*OAuthProvider, error) {
	var p OAuthProvider
	if err := s.db.WithContext(ctx).Where("provider_name = ?", name).Take(&p).Error; err != nil {
		return nil, fmt.Errorf("get oauth provider %q: %w", name, classify(err))
	}
	return &p, nil
}

// ListOAuthProviders returns every provider, by name.
func (s *Store) ListOAuthProviders(ctx context.Context) ([]OAuthProvider, error) {
	var ps []OAuthProvider
	if err := s.db.WithContext(ctx).Order("provider_name").Find(&ps).Error; err != nil {
		return nil, fmt.Errorf("list oauth providers: %w", classify(err))
	}
	return ps, nil
}

// DeleteOAuthProvider removes the provider called name with its flows and
// connections (their tokens are of no use without it), or returns
// ErrNotFound.
func (s *Store) DeleteOAuthProvider(ctx context.Context, name string) error {
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		if err := affected(tx.Where("provider_name = ?", name).Delete(&OAuthProvider{})); err != nil {
			return err
		}
		if err := tx.Where("provider_name = ?", name).Delete(&OAuthFlow{}).Error; err != nil {
			return err
		}
		return tx.Where("provider_name = ?", name).Delete(&OAuthConnection{}).Error
	})
	if err != nil {
		return fmt.Errorf("delete oauth provider %q: %w", name, classify(err))
	}
	return nil
}

// UpdateOAuthProviderSecret replaces the client secret of provider id if
// it still holds oldValue (cred rotate); ErrNotFound otherwise.
func (s *Store) UpdateOAuthProviderSecret(ctx context.Context, id int64, oldValue, newValue, keyID string) error {
	res := s.db.WithContext(ctx).Model(&OAuthProvider{}).Where("provider_id = ? AND client_secret = ?", id, oldValue).
		Updates(map[string]any{"client_secret": newValue, "key_id": keyID})
	if err := affected(res); err != nil {
		return fmt.Errorf("update oauth provider %d secret: %w", id, err)
	}
	return nil
}

// Flow phases: created by POST /v1/connections/{provider}/authorize,
// started when its start URL was opened (the handle spent, the cookie
// set), exchanging while its callback trades the code, obtained while the
// user confirms, done once the state is spent for good.
const (
	FlowCreated    = "created"
	FlowStarted    = "started"
	FlowExchanging = "exchanging"
	FlowObtained   = "obtained"
	FlowDone       = "done"
)

// OAuthFlow is a row of sys_ai_oauth_flow: one authorization in progress,
// kept in the database so that its start, callback and confirmation may
// each land on another replica. Hashes are hex SHA-256; Verifier and the
// tokens are encrypted strings.
type OAuthFlow struct {
	ID             string     `gorm:"column:flow_id;primaryKey"`
	HandleHash     string     `gorm:"column:handle_hash"`
	StateHash      string     `gorm:"column:state_hash"`
	UserID         int64      `gorm:"column:user_id"`
	Provider       string     `gorm:"column:provider_name"`
	DisplayName    string     `gorm:"column:display_name"`
	Phase          string     `gorm:"column:phase"`
	Verifier       string     `gorm:"column:verifier"`
	BindingHash    string     `gorm:"column:binding_hash"`
	CSRFHash       string     `gorm:"column:csrf_hash"`
	AccessToken    string     `gorm:"column:access_token"`
	RefreshToken   string     `gorm:"column:refresh_token"`
	KeyID          string     `gorm:"column:key_id"`
	Scopes         JSON       `gorm:"column:scopes"`
	TokenExpiresAt *time.Time `gorm:"column:token_expires_at"`
	Account        string     `gorm:"column:account"`
	ExpiresAt      time.Time  `gorm:"column:expires_at"`
	CreateTime     time.Time  `gorm:"column:create_time"`
}

// TableName maps OAuthFlow onto its table.
func (OAuthFlow) TableName() string { return "sys_ai_oauth_flow" }

// CreateOAuthFlow inserts f, and removes flows expired before it began.
func (s *Store) CreateOAuthFlow(ctx context.Context, f *OAuthFlow) error {
	f.CreateTime = now()
	f.ExpiresAt = dbTime(f.ExpiresAt)
	if err := s.db.WithContext(ctx).Create(f).Error; err != nil {
		return fmt.Errorf("create oauth flow: %w", classify(err))
	}
	if err := s.db.WithContext(ctx).Where("expires_at < ?", f.CreateTime).Delete(&OAuthFlow{}).Error; err != nil {
		return fmt.Errorf("remove expired oauth flows: %w", classify(err))
	}
	return nil
}

// CountOAuthFlows counts the user's flows not yet expired, finished or
// not.
func (s *Store) CountOAuthFlows(ctx context.Context, userID int64) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&OAuthFlow{}).Where("user_id = ? AND expires_at > ?", userID, now()).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("count oauth flows: %w", classify(err))
	}
	return n, nil
}

// FindOAuthFlow returns the flow whose column (flow_id, handle_hash or
// state_hash) holds value, or ErrNotFound.
func (s *Store) FindOAuthFlow(ctx context.Context, column, value string) (*OAuthFlow, error) {
	switch column {
	case "flow_id", "handle_hash", "state_hash":
	default:
		return nil, fmt.Errorf("find oauth flow: %q is not a key of the flow", column)
	}
	var f OAuthFlow
	if err := s.db.WithContext(ctx).Where(column+" = ?", value).Take(&f).Error; err != nil {
		return nil, fmt.Errorf("find oauth flow: %w", classify(err))
	}
	return &f, nil
}

// AdvanceOAuthFlow moves flow id from phase from to phase to, writing set
// with it, if it is still in from and unexpired: a conditional update, so
// that of two requests spending one handle or state, one wins. The loser
// gets ErrNotFound.
func (s *Store) AdvanceOAuthFlow(ctx context.Context, id, from, to string, set map[string]any) error {
	cols := map[string]any{"phase": to}
	for k, v := range set {
		cols[k] = v
	}
	res := s.db.WithContext(ctx).Model(&OAuthFlow{}).Where("flow_id = ? AND phase = ? AND expires_at > ?", id, from, now()).Updates(cols)
	if err := affected(res); err != nil {
		return fmt.Errorf("advance oauth flow from %s to %s: %w", from, to, err)
	}
	return nil
}

// Connection states.
const (
	ConnectionConnected = "connected"
	ConnectionBroken    = "broken"
)

// OAuthConnection is a row of sys_ai_oauth_connection: a user's tokens at
// a provider, encrypted. Version moves with every write of the tokens or
// of a refresh claim; a replica refreshes only after claiming the row at
// the version it read (ClaimOAuthRefresh).
type OAuthConnection struct {
	ID              int64      `gorm:"column:connection_id;primaryKey;autoIncrement"`
	UserID          int64      `gorm:"column:user_id"`
	Provider        string     `gorm:"column:provider_name"`
	AccessToken     string     `gorm:"column:access_token"`
	RefreshToken    string     `gorm:"column:refresh_token"`
	KeyID           string     `gorm:"column:key_id"`
	Scopes          JSON       `gorm:"column:scopes"`
	ExpiresAt       *time.Time `gorm:"column:expires_at"`
	State           string     `gorm:"column:state"`
	BrokenReason    string     `gorm:"column:broken_reason"`
	Account         string     `gorm:"column:account"`
	Version         int64      `gorm:"column:version"`
	RefreshOwner    *string    `gorm:"column:refresh_owner"`
	RefreshingUntil *time.Time `gorm:"column:refreshing_until"`
	RefreshedAt     *time.Time `gorm:"column:refreshed_at"`
	ConnectedAt     time.Time  `gorm:"column:connected_at"`
	UpdateTime      time.Time  `gorm:"column:update_time"`
}

// TableName maps OAuthConnection onto its table.
func (OAuthConnection) TableName() string { return "sys_ai_oauth_connection" }

// PutOAuthConnection stores c as the user's connection to its provider,
// replacing any earlier one (a reconnect): connected, unclaimed, at a new
// version.
func (s *Store) PutOAuthConnection(ctx context.Context, c *OAuthConnection) error {
	t := now()
	c.State, c.BrokenReason, c.RefreshOwner, c.RefreshingUntil, c.RefreshedAt = ConnectionConnected, "", nil, nil, nil
	c.ConnectedAt, c.UpdateTime = t, t
	c.ExpiresAt = dbTimePtr(c.ExpiresAt)
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		var old OAuthConnection
		err := tx.Where("user_id = ? AND provider_name = ?", c.UserID, c.Provider).Take(&old).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			c.Version = 1
			return tx.Create(c).Error
		case err != nil:
			return err
		}
		c.ID, c.Version = old.ID, old.Version+1
		return tx.Save(c).Error
	})
	if err != nil {
		return fmt.Errorf("put oauth connection of user %d to %s: %w", c.UserID, c.Provider, classify(err))
	}
	return nil
}

// GetOAuthConnection returns the user's connection to provider, or
// ErrNotFound.
func (s *Store) GetOAuthConnection(ctx context.Context, userID int64, provider string) (*OAuthConnection, error) {
	var c OAuthConnection
	if err := s.db.WithContext(ctx).Where("user_id = ? AND provider_name = ?", userID, provider).Take(&c).Error; err != nil {
		return nil, fmt.Errorf("get oauth connection of user %d to %s: %w", userID, provider, classify(err))
	}
	return &c, nil
}

// ListOAuthConnections returns the connections of userID, or of every
// user when userID is 0, by user and provider.
func (s *Store) ListOAuthConnections(ctx context.Context, userID int64) ([]OAuthConnection, error) {
	q := s.db.WithContext(ctx).Order("user_id, provider_name")
	if userID != 0 {
		q = q.Where("user_id = ?", userID)
	}
	var cs []OAuthConnection
	if err := q.Find(&cs).Error; err != nil {
		return nil, fmt.Errorf("list oauth connections: %w", classify(err))
	}
	return cs, nil
}

// ListProviderConnections returns every connection to provider.
func (s *Store) ListProviderConnections(ctx context.Context, provider string) ([]OAuthConnection, error) {
	var cs []OAuthConnection
	if err := s.db.WithContext(ctx).Where("provider_name = ?", provider).Order("user_id").Find(&cs).Error; err != nil {
		return nil, fmt.Errorf("list connections to %q: %w", provider, classify(err))
	}
	return cs, nil
}

// DeleteOAuthConnection removes the user's connection to provider, or
// returns ErrNotFound.
func (s *Store) DeleteOAuthConnection(ctx context.Context, userID int64, provider string) error {
	if err := affected(s.db.WithContext(ctx).Where("user_id = ? AND provider_name = ?", userID, provider).Delete(&OAuthConnection{})); err != nil {
		return fmt.Errorf("delete oauth connection of user %d to %s: %w", userID, provider, err)
	}
	return nil
}

// EachOAuthSecret calls fn with every provider and connection (cred
// rotate), one at a time.
func (s *Store) EachOAuthSecret(ctx context.Context, provider func(*OAuthProvider) error, connection func(*OAuthConnection) error) error {
	ps, err := s.ListOAuthProviders(ctx)
	if err != nil {
		return err
	}
	for i := range ps {
		if err := provider(&ps[i]); err != nil {
			return err
		}
	}
	cs, err := s.ListOAuthConnections(ctx, 0)
	if err != nil {
		return err
	}
	for i := range cs {
		if err := connection(&cs[i]); err != nil {
			return err
		}
	}
	return nil
}

// UpdateOAuthConnectionSecrets replaces the encrypted tokens of
// connection id if it is still at version (cred rotate: the tokens are
// the same, re-encrypted, so the version stays); ErrNotFound otherwise.
func (s *Store) UpdateOAuthConnectionSecrets(ctx context.Context, id, version int64, access, refresh, keyID string) error {
	res := s.db.WithContext(ctx).Model(&OAuthConnection{}).Where("connection_id = ? AND version = ?", id, version).
		Updates(map[string]any{"access_token": access, "refresh_token": refresh, "key_id": keyID})
	if err := affected(res); err != nil {
		return fmt.Errorf("update oauth connection %d secrets: %w", id, err)
	}
	return nil
}

// ClaimOAuthRefresh claims connection id, read at version, for a refresh
// by owner until until, if nobody holds an unexpired claim on it and it
// is connected: the conditional update that makes a refresh single-flight
// across replicas, taken before the provider is contacted. It reports
// whether owner got the claim; the row is then at version+1.
func (s *Store) ClaimOAuthRefresh(ctx context.Context, id, version int64, owner string, until time.Time) (bool, error) {
	t := now()
	res := s.db.WithContext(ctx).Model(&OAuthConnection{}).
		Where("connection_id = ? AND version = ? AND state = ? AND (refreshing_until IS NULL OR refreshing_until <= ?)", id, version, ConnectionConnected, t).
		Updates(map[string]any{"refresh_owner": owner, "refreshing_until": dbTime(until), "version": gorm.Expr("version + 1"), "update_time": t})
	if res.Error != nil {
		return false, fmt.Errorf("claim oauth connection %d for a refresh: %w", id, classify(res.Error))
	}
	return res.RowsAffected == 1, nil
}

// RefreshedTokens are what a refresh writes.
type RefreshedTokens struct {
	AccessToken, RefreshToken, KeyID string
	Scopes                           JSON
	ExpiresAt                        *time.Time
}

// StoreOAuthRefresh writes the tokens a refresh obtained and ends owner's
// claim, if owner still holds it at version; ErrNotFound otherwise (the
// claim expired and another replica took the row over).
func (s *Store) StoreOAuthRefresh(ctx context.Context, id, version int64, owner string, tok RefreshedTokens) error {
	t := now()
	cols := map[string]any{"access_token": tok.AccessToken, "refresh_token": tok.RefreshToken, "key_id": tok.KeyID,
		"expires_at": dbTimePtr(tok.ExpiresAt), "refresh_owner": nil, "refreshing_until": nil, "refreshed_at": t,
		"version": gorm.Expr("version + 1"), "update_time": t}
	if tok.Scopes != nil {
		cols["scopes"] = tok.Scopes
	}
	res := s.db.WithContext(ctx).Model(&OAuthConnection{}).Where("connection_id = ? AND version = ? AND refresh_owner = ?", id, version, owner).Updates(cols)
	if err := affected(res); err != nil {
		return fmt.Errorf("store the refreshed tokens of oauth connection %d: %w", id, err)
	}
	return nil
}

// ReleaseOAuthRefresh ends owner's claim at version without new tokens:
// the provider was not reached, the refresh token is unspent.
func (s *Store) ReleaseOAuthRefresh(ctx context.Context, id, version int64, owner string) error {
	res := s.db.WithContext(ctx).Model(&OAuthConnection{}).Where("connection_id = ? AND version = ? AND refresh_owner = ?", id, version, owner).
		Updates(map[string]any{"refresh_owner": nil, "refreshing_until": nil, "version": gorm.Expr("version + 1"), "update_time": now()})
	if err := affected(res); err != nil {
		return fmt.Errorf("release the refresh claim of oauth connection %d: %w", id, err)
	}
	return nil
}

// BreakOAuthConnection marks connection id broken for reason if it is
// still at version: its user must connect again. ErrNotFound when the row
// moved on meanwhile.
func (s *Store) BreakOAuthConnection(ctx context.Context, id, version int64, reason string) error {
	t := now()
	res := s.db.WithContext(ctx).Model(&OAuthConnection{}).Where("connection_id = ? AND version = ?", id, version).
		Updates(map[string]any{"state": ConnectionBroken, "broken_reason": reason, "refresh_owner": nil, "refreshing_until": nil,
			"version": gorm.Expr("version + 1"), "update_time": t})
	if err := affected(res); err != nil {
		return fmt.Errorf("mark oauth connection %d broken: %w", id, err)
	}
	return nil
}
