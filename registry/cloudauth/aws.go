package cloudauth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/ecrpublic"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/imagebump/imagebump/internal/cloudhost"
)

// awsSource fetches ECR authorization tokens with the AWS SDK's default
// credential chain.
//
// Why the SDK and not amazon-ecr-credential-helper's ecr-login package: the
// helper builds a new SDK config for every Get, keeps its own cache in a
// file under the home directory (~/.ecr) unless told not to, logs through
// logrus, and reports a missing credential as an opaque "no basic auth
// credentials". Calling GetAuthorizationToken ourselves is a few lines,
// keeps the token in memory only, and lets the error say which credential
// source was used.
type awsSource struct {
	host      string
	info      cloudhost.Host
	transport http.RoundTripper
	cfg       *aws.Config // loaded on first use, then kept: it caches credentials
	source    string      // where the last credentials came from, as the SDK names it
	remember  func(name, value string)
	log       *slog.Logger
}

// awsLogger passes the SDK's log lines (a fall back to IMDSv1, say) to
// imagebump's logger, in its format, where the SDK printed them to stderr
// on its own.
type awsLogger struct{ log *slog.Logger }

func (l awsLogger) Logf(c logging.Classification, format string, v ...any) {
	level := slog.LevelDebug
	if c == logging.Warn {
		level = slog.LevelWarn
	}
	l.log.Log(context.Background(), level, "aws sdk: "+fmt.Sprintf(format, v...))
}

func (s *awsSource) fetch(ctx context.Context) (*token, error) {
	if s.cfg == nil {
		opts := []func(*awsconfig.LoadOptions) error{
			awsconfig.WithRegion(s.info.Region),
			awsconfig.WithHTTPClient(awsHTTPClient(s.transport)),
			awsconfig.WithLogger(awsLogger{log: s.log}),
		}
		if s.info.FIPS {
			opts = append(opts, awsconfig.WithUseFIPSEndpoint(aws.FIPSEndpointStateEnabled))
		}
		cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
		if err != nil {
			return nil, &Error{Provider: cloudhost.AWS, Host: s.host, Step: "loading the AWS configuration", Err: err,
				Hint: "check AWS_PROFILE, AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE and the files they name"}
		}
		s.cfg = &cfg
	}
	// What the SDK sends (see sent.go): the web identity or Pod Identity
	// token to get keys, then the session token with every ECR call.
	rememberEnv(s.remember, "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN")
	rememberFileEnv(s.remember, "AWS_WEB_IDENTITY_TOKEN_FILE")
	rememberFileEnv(s.remember, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")
	// Ask for the credentials first, so that a missing or broken source is
	// reported as such and not as a failed ECR call.
	creds, err := s.cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, awsCredentialsError(s.host, err)
	}
	s.remember("aws secret access key", creds.SecretAccessKey)
	s.remember("aws session token", creds.SessionToken)
	s.source = creds.Source
	if s.info.Public {
		return s.public(ctx)
	}
	return s.private(ctx)
}

func (s *awsSource) private(ctx context.Context) (*token, error) {
	out, err := ecr.NewFromConfig(*s.cfg).GetAuthorizationToken(ctx, &ecr.GetAuthorizationTokenInput{
		// Deprecated by AWS (a token works for every registry the caller
		// may use), but it makes a cross-account registry explicit in
		// CloudTrail, as the ECR credential helper does.
		RegistryIds: []string{s.info.Account},
	})
	if err != nil {
		return nil, s.apiError("ecr:GetAuthorizationToken", err)
	}
	if len(out.AuthorizationData) == 0 {
		return nil, s.apiError("ecr:GetAuthorizationToken", errors.New("the answer holds no authorization data"))
	}
	d := out.AuthorizationData[0]
	return s.decode(aws.ToString(d.AuthorizationToken), d.ExpiresAt)
}

func (s *awsSource) public(ctx context.Context) (*token, error) {
	out, err := ecrpublic.NewFromConfig(*s.cfg).GetAuthorizationToken(ctx, &ecrpublic.GetAuthorizationTokenInput{})
	if err != nil {
		return nil, s.apiError("ecr-public:GetAuthorizationToken", err)
	}
	if out.AuthorizationData == nil {
		return nil, s.apiError("ecr-public:GetAuthorizationToken", errors.New("the answer holds no authorization data"))
	}
	return s.decode(aws.ToString(out.AuthorizationData.AuthorizationToken), out.AuthorizationData.ExpiresAt)
}

// decode turns an ECR authorization token (base64 of "AWS:PASSWORD") into
// basic credentials.
func (s *awsSource) decode(tok string, expiresAt *time.Time) (*token, error) {
	raw, err := base64.StdEncoding.DecodeString(tok)
	user, pass, ok := strings.Cut(string(raw), ":")
	if err != nil || !ok || user == "" || pass == "" {
		// Say nothing of the content: it is a credential.
		return nil, s.apiError("decoding the ECR authorization token", errors.New("not base64 of USER:PASSWORD"))
	}
	t := &token{
		cfg:     authn.AuthConfig{Username: user, Password: pass},
		secrets: []string{tok, pass},
	}
	if expiresAt != nil {
		t.expiry = *expiresAt
	}
	return t, nil
}

// apiError explains a failed call to the ECR API, naming the credential
// source it was made with and what to do for the kind of failure.
func (s *awsSource) apiError(step string, err error) error {
	e := &Error{Provider: cloudhost.AWS, Host: s.host, Step: step, Err: err}
	if s.source != "" {
		e.Step += " (with credentials from " + s.source + ")"
	}
	var api smithy.APIError
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.As(err, &api):
		switch api.ErrorCode() {
		case "ExpiredTokenException", "ExpiredToken", "RequestExpired", "TokenRefreshRequired":
			e.Hint = "those credentials have expired: renew them (temporary keys come with a new AWS_SESSION_TOKEN; an SSO profile needs aws sso login)"
		case "UnrecognizedClientException", "InvalidClientTokenId", "InvalidSignatureException", "SignatureDoesNotMatch", "IncompleteSignature":
			e.Hint = "AWS does not accept those credentials: check the access key id, its secret and session token, and this machine's clock (a signature more than 5 minutes off is refused)"
		default:
			e.Hint = "the credentials need ecr:GetAuthorizationToken (ecr-public:GetAuthorizationToken and sts:GetServiceBearerToken for public.ecr.aws)"
		}
	case errors.As(err, &dns), errors.As(err, &op):
		e.Hint = "the ECR API did not answer: check DNS, the proxy (HTTPS_PROXY, NO_PROXY) and, in a VPC without internet access, an interface endpoint for ecr.api (api.ecr-public in us-east-1 for public.ecr.aws)"
	}
	return e
}

// awsHTTPClient returns the SDK's own HTTP client (which AWS_CA_BUNDLE
// can still add to) with the dialer, proxy and TLS settings of rt, when rt
// is an *http.Transport.
func awsHTTPClient(rt http.RoundTripper) *awshttp.BuildableClient {
	c := awshttp.NewBuildableClient()
	base, ok := rt.(*http.Transport)
	if !ok {
		return c
	}
	return c.WithTransportOptions(func(t *http.Transport) {
		t.Proxy = base.Proxy
		if base.DialContext != nil {
			t.DialContext = base.DialContext
		}
		if base.TLSClientConfig != nil {
			t.TLSClientConfig = base.TLSClientConfig.Clone()
		}
	})
}

// awsCredentialsError explains a credential chain that gave nothing,
// naming the source the SDK used, as far as the environment tells.
func awsCredentialsError(host string, err error) error {
	env := func(k string) bool { return os.Getenv(k) != "" }
	e := &Error{Provider: cloudhost.AWS, Host: host, Err: err}
	switch {
	case env("AWS_PROFILE"):
		e.Step = fmt.Sprintf("no credentials from the shared config profile %q (AWS_PROFILE)", os.Getenv("AWS_PROFILE"))
		e.Hint = "check that profile in ~/.aws/config and ~/.aws/credentials (or AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE)"
	case env("AWS_ACCESS_KEY_ID"):
		e.Step = "no credentials from the environment (AWS_ACCESS_KEY_ID)"
		e.Hint = "set AWS_SECRET_ACCESS_KEY with AWS_ACCESS_KEY_ID (and AWS_SESSION_TOKEN for temporary keys)"
	case env("AWS_WEB_IDENTITY_TOKEN_FILE"):
		e.Step = "no credentials from web identity (IRSA: AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE)"
		e.Hint = "check that the token file is readable, that AWS_ROLE_ARN is set and that the role trusts this cluster's OIDC provider and service account"
	case env("AWS_CONTAINER_CREDENTIALS_FULL_URI"), env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
		e.Step = "no credentials from the container endpoint (EKS Pod Identity or ECS task role: AWS_CONTAINER_CREDENTIALS_FULL_URI or _RELATIVE_URI)"
		e.Hint = "check the pod's Pod Identity association (or the ECS task role) and AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"
	default:
		e.Step = "no credentials: tried the environment (AWS_ACCESS_KEY_ID), the shared config and credentials files (default profile), web identity (AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE), EKS Pod Identity and ECS (AWS_CONTAINER_CREDENTIALS_FULL_URI) and the EC2 instance role (IMDS)"
		e.Hint = "on EKS give the service account an IAM role (IRSA) or a Pod Identity association; on EC2 an instance profile (in a container there, the instance's metadata hop limit must be 2: aws ec2 modify-instance-metadata-options --http-put-response-hop-limit 2); elsewhere set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
	}
	return e
}
