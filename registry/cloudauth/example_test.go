package cloudauth_test

import (
	"context"
	"fmt"

	"github.com/imagebump/imagebump/registry/cloudauth"
)

// An Authenticator for an ECR registry, whose name gives the account and
// region. It sends nothing until asked for credentials.
func ExampleNew() {
	a, err := cloudauth.New(cloudauth.Options{
		Host:     "123456789012.dkr.ecr.eu-west-1.amazonaws.com",
		Provider: "auto",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a.Provider())
	_ = func(ctx context.Context) {
		cfg, err := a.AuthorizationContext(ctx) // the AWS SDK's default chain, then ecr:GetAuthorizationToken
		_, _ = cfg, err
	}
	// Output: aws
}
