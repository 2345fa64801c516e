package policy_test

import (
	"fmt"

	"github.com/imagebump/imagebump/policy"
)

func Example() {
	p, err := policy.New(policy.Spec{SemVer: "~5.3.x"})
	if err != nil {
		fmt.Println(err)
		return
	}
	res := p.Select([]string{"5.2.9", "5.3.0", "5.3.12", "5.4.0", "latest", "sha256-2f4a.sig"})
	fmt.Println(res.Latest)
	fmt.Println(res.Summary())
	// Output:
	// 5.3.12
	// picked 5.3.12 from 6 tags (1 excluded, 0 filtered, 3 skipped)
}

func ExamplePolicy_Select_extract() {
	p, err := policy.New(policy.Spec{
		Alphabetical:  "asc",
		FilterPattern: `^RELEASE\.(?P<timestamp>.*)Z$`,
		FilterExtract: "$timestamp",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res := p.Select([]string{"RELEASE.2022-10-08T20-11-00Z", "latest", "RELEASE.2022-10-22T19-06-08Z", "RELEASE.2022-10-20T00-55-09Z"})
	fmt.Println(res.Latest)
	fmt.Println("filtered:", res.Filtered)
	// Output:
	// RELEASE.2022-10-22T19-06-08Z
	// filtered: [latest]
}

func ExampleNew_error() {
	_, err := policy.New(policy.Spec{SemVer: ">=1", FilterPattern: `^v(?P<version>.*)$`, FilterExtract: "$ver"})
	fmt.Println(err)
	// Output:
	// filterTags.extract: invalid template "$ver": pattern has no group named "ver"
}

func ExampleDigestMode_NeedsLookup() {
	m := policy.DigestIfNotPresent
	fmt.Println(m.NeedsLookup("1.4.3", "1.4.2", "sha256:9f2c"))
	fmt.Println(m.NeedsLookup("1.4.3", "1.4.3", "sha256:9f2c"))
	// Output:
	// true
	// false
}
